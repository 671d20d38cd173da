#!/usr/bin/env bash
# CTR model quality on a realistic click log (docs/training.md): oar-gen-ctr --layout=clicklog
# (500k train rows, then 100k test rows later in time; string user and item ids, categories,
# hour, device, price, recent categories, drift) with its teacher's AUC, the best any model can
# reach. The documented oar-model commands (wide & deep and DeepFM, the recipe's defaults, with
# and without crosses), test AUC after each of EPOCHS epochs, against scikit-learn's logistic
# regression on one-hot features with the same crosses (bench/ctr_quality_lr.py; its L2 strength
# picked on the test rows, which favours it).
# Usage: bench/ctr_quality.sh [EPOCHS]   (after scripts/setup.sh; default 3; python3-sklearn)
set -euo pipefail
epochs=${1:-3}
cd "$(dirname "$0")/.."
b=build
py=/usr/bin/python3
work=$(mktemp -d /tmp/oar-ctr-quality.XXXXXX)
trap 'rm -rf "$work"' EXIT

$b/oar-gen-ctr --layout=clicklog -o "$work/log" | tail -2
data="--format=csv --data=$work/log/train.csv --test-data=$work/log/test.csv --label=clicked
      --sparse=user,item,cat,hour,device,recent:multi:8 --dense=price:bucketize:auto:16"
crosses="--cross=cat*hour:deep,cat*price:deep,recent*cat:deep"

run() { # NAME MODEL [FLAGS]: the test AUC after each epoch
  local name=$1
  $b/oar-model --model="$2" --epochs="$epochs" $data ${3:-} -o "$work/$name" >/dev/null
  $b/oar-executor --main "$work/$name/main.pb" --startup "$work/$name/startup.pb" \
    --eval-every=epoch >"$work/$name.log" 2>&1
  local aucs
  aucs=$(grep '^after step' "$work/$name.log" | grep -o 'auc [0-9.]*' | awk '{printf "%s ", $2}')
  printf '%-28s %s\n' "$name" "$aucs"
}

echo "# test AUC after epochs 1..$epochs ($(nproc) cores, $(date -u +%F))"
run "wide_deep" wide_deep
run "deepfm" deepfm
run "wide_deep with crosses" wide_deep "$crosses"
run "deepfm with crosses" deepfm "$crosses"
if $py -c 'import sklearn' 2>/dev/null; then
  $py bench/ctr_quality_lr.py "$work/log/train.csv" "$work/log/test.csv" |
    sed 's/^lr /logistic regression          /'
  $py bench/ctr_quality_lr.py "$work/log/train.csv" "$work/log/test.csv" crosses |
    sed 's/^lr+crosses /logistic regression, crosses /'
else
  echo "logistic regression: skipped (no scikit-learn: apt install python3-sklearn)"
fi
