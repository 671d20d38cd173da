#!/usr/bin/env bash
# Installs what is missing, builds, and trains fit_a_line on UCI housing, printing the loss as it
# falls and the test-set error.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=build/main_job
rm -rf "$out" && mkdir -p "$out"
build/oar-model --model=linear --in=13 --out=1 --loss=square_error_cost --optimizer=sgd \
  --lr=0.01 --batch-size=20 --epochs=30 --format=uci_housing \
  --data=data/uci_housing/housing.data -o "$out/model"
build/oar-executor --main "$out/model/main.pb" --startup "$out/model/startup.pb" \
  --save "$out/params" --metrics "$out/metrics.csv" --log-every 63
