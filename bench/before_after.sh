#!/usr/bin/env bash
# Before and after a change, in one run: the jobs of bench/dist_mlp.sh (the MNIST MLP 784-512-
# 256-10, SGD, batch 128 a trainer, on one machine and as oar-launch jobs: sync 1x2 and 2x2,
# async 2x2, plain TCP) and of bench/ctr.sh (wide & deep on oar-gen-ctr's lines, on one machine
# and with its tables on 2 pservers and 2 trainers, async and sync), each launched with an older
# install's tools (BEFORE: a `cmake --install` prefix) and with this build's, turn by turn. Each
# turn runs both sides of every job back to back, the side that goes first alternating, and a
# job's verdict is the median of its after / before ratios over the turns with the sign test's
# interval (bench/turn_stats.sh): above 1, the new build is faster; an interval holding 1, a tie
# within the noise.
# Usage: bench/before_after.sh BEFORE_PREFIX [TURNS] [MLP_EPOCHS] [CTR_LINES]
#   (after scripts/setup.sh; e.g. cmake --install build --prefix /tmp/before at the old commit)
set -euo pipefail
before=${1:?usage: bench/before_after.sh BEFORE_PREFIX [TURNS] [MLP_EPOCHS] [CTR_LINES]}
turns=${2:-5}
epochs=${3:-2}
lines=${4:-100000}
unset OMP_NUM_THREADS # each node's default budget, as users run
cd "$(dirname "$0")/.."
after=build
[ -x "$before/bin/oar-launch" ] || { echo "before_after: $before/bin/oar-launch missing"; exit 1; }
data=/usr/share/datasets/fashion-mnist
[ -r $data/train-images-idx3-ubyte.gz ] || { echo "before_after: $data missing (apt-get install dataset-fashion-mnist)"; exit 1; }
work=$(mktemp -d /tmp/oar-before-after.XXXXXX)
trap 'rm -rf "$work"' EXIT
. bench/turn_stats.sh # turnRatios, median, medianInterval

# The same model files for both sides, written by this build.
$after/oar-model --model=mlp --in=784 --hidden=512,256 --out=10 --loss=softmax_with_cross_entropy \
  --optimizer=sgd --lr=0.01 --batch-size=128 --epochs=$epochs --format=mnist_idx \
  --data=$data/train-images-idx3-ubyte.gz,$data/train-labels-idx1-ubyte.gz -o "$work/mlp" >/dev/null
$after/oar-gen-ctr --train-lines="$lines" --test-lines=1000 -o "$work/data" >/dev/null
$after/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" -o "$work/ctr1" >/dev/null
$after/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" --batch-size=500 \
  -o "$work/ctr2" >/dev/null

# Sum of the trainers' "(R samples/s)" in a log.
rate() { grep -o '([0-9]* samples/s)' "$1" | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}'; }

# run BIN JOB: one run of JOB with the tools in BIN; prints its samples/s.
run() {
  local bin=$1 job=$2
  case $job in
    mlp-one) $bin/oar-executor --main "$work/mlp/main.pb" --startup "$work/mlp/startup.pb" --num-threads=1 ;;
    ctr-one) $bin/oar-executor --main "$work/ctr1/main.pb" --startup "$work/ctr1/startup.pb" --num-threads=1 ;;
    *)
      set -- $job # "MODEL SERVERS WORKERS MODE"
      $bin/oar-launch --server-num=$2 --worker-num=$3 --mode=$4 --timeout=600 --curve=false "$work/$1" ;;
  esac >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  rate "$work/log"
}

jobs=("mlp-one" "mlp 1 2 sync" "mlp 2 2 sync" "mlp 2 2 async" "ctr-one" "ctr2 2 2 async" "ctr2 2 2 sync")
declare -A rates # by "side job|turn"
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
echo "# before: $before ($(cat "$before/COMMIT" 2>/dev/null || echo "commit not recorded")); after: $after ($(git rev-parse --short HEAD))"
for ((turn = 0; turn < turns; turn++)); do
  for job in "${jobs[@]}"; do
    if ((turn % 2 == 0)); then order="before after"; else order="after before"; fi
    for side in $order; do
      bin=$after/
      [ $side = before ] && bin=$before/bin
      r=$(run "${bin%/}" "$job") # an assignment, so that a failed run ends the script
      rates[$side $job|$turn]=$r
    done
  done
done
printf '%-20s %-44s %-44s %s\n' "job" "before, samples/s by turn" "after" "after / before: median, interval"
for job in "${jobs[@]}"; do
  b="" a=""
  for ((turn = 0; turn < turns; turn++)); do
    b+="${rates[before $job|$turn]} " a+="${rates[after $job|$turn]} "
  done
  r=$(turnRatios rates "after $job" "before $job")
  printf '%-20s %-44s %-44s %s, %s\n' "$job" "$b" "$a" "$(median "$r")" "$(medianInterval "$r")"
done
