#!/usr/bin/env bash
# Installs what is missing, builds, and trains fit_a_line on UCI housing as a local distributed
# job: a scheduler, 2 pservers and 2 trainers (real processes on 127.0.0.1, sync mode; the
# nodes register with the scheduler and get their endpoints from it). Prints the falling loss
# and the test-set error.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
out=build/main_job
rm -rf "$out" && mkdir -p "$out"
build/oar-model --model=linear --in=13 --out=1 --loss=square_error_cost --optimizer=sgd \
  --lr=0.01 --batch-size=10 --epochs=30 --format=uci_housing \
  --data=data/uci_housing/housing.data -o "$out/model"
build/oar-launch --server-num=2 --worker-num=2 --mode=sync --scheduler --save "$out/params" \
  --timeout 600 \
  "$out/model" -- --log-every 126
