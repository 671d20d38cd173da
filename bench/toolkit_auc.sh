#!/usr/bin/env bash
# Wide & deep with the recipe's defaults against the training toolkit's settings, 5 epochs, test
# AUC after every epoch (docs/training.md): on oar-gen-ctr's click log, and on MovieLens ratings
# as a click log of our own (clicked = a rating of 4 or more; user, movie, hour and weekday of the
# rating; the last 20% of the ratings in time are the test set). The toolkit run keeps its best
# epoch (--keep-best=auc), which is then evaluated again from SAVE/best.
# Usage: bench/toolkit_auc.sh [TRAIN_LINES]   (after scripts/setup.sh; default 1000000)
set -euo pipefail
lines=${1:-1000000}
cd "$(dirname "$0")/.."
b=build
work=$(mktemp -d /tmp/oar-toolkit-auc.XXXXXX)
trap 'rm -rf "$work"' EXIT

# The settings compared: the CTR recipe's defaults (Adagrad 0.02, batch 1000, 400-400-400), and
# settings of the toolkit chosen for each log (a few runs of each; docs/training.md).
toolkit_ctr="--weight-decay=1e-4 --dropout=0.3 --lr-schedule=exponential --lr-decay-steps=1000 --lr-decay-rate=0.3"
toolkit_movielens="--norm=layer --dropout=0.3 --weight-decay=1e-4 --lr-schedule=step --lr-decay-steps=626 --lr-decay-rate=0.1"

$b/oar-gen-ctr --train-lines="$lines" --test-lines=100000 -o "$work/ctr" | tail -1
# MovieLens: sorted by time, the first 80% train, the rest test.
awk -F, 'NR > 1 { h = int(($4 % 86400) / 3600); d = int($4 / 86400 + 4) % 7;
                  print $4 "," ($3 >= 4) ",u" $1 ",m" $2 "," h "," d }' data/movielens/ratings.csv |
  sort -t, -k1,1n | cut -d, -f2- >"$work/ml.rows"
n=$(wc -l <"$work/ml.rows")
{ echo clicked,user,movie,hour,weekday; head -n $((n * 8 / 10)) "$work/ml.rows"; } >"$work/ml_train.csv"
{ echo clicked,user,movie,hour,weekday; tail -n +$((n * 8 / 10 + 1)) "$work/ml.rows"; } >"$work/ml_test.csv"
echo "movielens: $((n * 8 / 10)) train and $((n - n * 8 / 10)) test ratings"

# AUC after each epoch of a run's log, space-separated.
aucs() { grep '^after step' "$1" | grep -o 'auc[_0-9.a-z]* [0-9.]*' | awk '{printf "%s ", $2}'; }

run() { # NAME MODEL_FLAGS [EXECUTOR_FLAGS]
  local name=$1
  $b/oar-model --model=wide_deep --epochs=5 $2 -o "$work/$name" >/dev/null
  $b/oar-executor --main "$work/$name/main.pb" --startup "$work/$name/startup.pb" \
    --eval-every=epoch ${3:-} >"$work/$name.log" 2>&1
  printf '%-24s %s\n' "$name" "$(aucs "$work/$name.log")"
}

ctr="--format=criteo --data=$work/ctr/train.txt --test-data=$work/ctr/test.txt"
ml="--format=csv --label=clicked --sparse=user,movie,hour:int,weekday:int --batch-size=256 \
    --data=$work/ml_train.csv --test-data=$work/ml_test.csv"
echo "# test AUC after epochs 1..5 ($(nproc) cores, $(date -u +%F))"
run ctr_defaults "$ctr"
run ctr_toolkit "$ctr $toolkit_ctr" "--keep-best=auc --save $work/ctr_toolkit/s"
grep '^best' "$work/ctr_toolkit.log"
$b/oar-executor --main "$work/ctr_toolkit/main.pb" --startup "$work/ctr_toolkit/startup.pb" \
  --load "$work/ctr_toolkit/s/best" --eval-only | grep 'test:' | sed 's/^/ctr best, reloaded: /'
run movielens_defaults "$ml"
run movielens_toolkit "$ml $toolkit_movielens" "--keep-best=auc --save $work/movielens_toolkit/s"
grep '^best' "$work/movielens_toolkit.log"
$b/oar-executor --main "$work/movielens_toolkit/main.pb" \
  --startup "$work/movielens_toolkit/startup.pb" --load "$work/movielens_toolkit/s/best" \
  --eval-only | grep 'test:' | sed 's/^/movielens best, reloaded: /'
