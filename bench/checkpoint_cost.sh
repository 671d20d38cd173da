#!/usr/bin/env bash
# What checkpoints cost a job: the 2 pservers x 2 trainers wide & deep job (oar-gen-ctr's click
# logs, the CTR defaults, 500 rows a trainer a step) run without `--checkpoint-dir`, with it at
# the default schedule (--checkpoint-every 100; files written off the pserver's loop thread), and
# with it written on the loop thread (OAR_CHECKPOINT_WRITES=inline), in turns that rotate which
# goes first, each run a fresh checkpoint directory. Prints each turn's wall times, the medians of
# the turns' ratios (the job's speed with checkpoints over its speed without: 1.00 is free), and
# what one checkpoint of one pserver holds (files and bytes).
# Usage: bench/checkpoint_cost.sh [LINES] [TURNS]   (after scripts/setup.sh; 200000 lines, 5 turns)
set -euo pipefail
lines=${1:-200000}
turns=${2:-5}
cd "$(dirname "$0")/.."
b=${OAR_BIN:-build} # OAR_BIN: another build's binaries, to compare
work=$(mktemp -d /tmp/oar-ckpt.XXXXXX)
trap 'rm -rf "$work"' EXIT
$b/oar-gen-ctr --train-lines="$lines" --test-lines=1000 -o "$work/data" >/dev/null
$b/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" --batch-size=500 \
  -o "$work/model" >/dev/null

# Seconds a launch takes; its log goes to $work/log.
timed() {
  local start end
  start=$(date +%s.%N)
  $b/oar-launch --server-num=2 --worker-num=2 --mode=sync --timeout=900 "$work/model" -- "$@" \
    >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b - a}'
}

echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $lines lines, $(date -u +%F)"
printf '%-6s %12s %12s %12s %18s %18s\n' turn "without (s)" "with (s)" "inline (s)" "with / without" "inline / without"
withRatios=() inlineRatios=()
for turn in $(seq "$turns"); do
  declare -A t=()
  # Rotate the order: each side goes first, second and third in turn.
  order=(without with inline)
  for ((k = 0; k < (turn - 1) % 3; k++)); do order=("${order[@]:1}" "${order[0]}"); done
  for side in "${order[@]}"; do
    rm -rf "$work/ckpt"
    case $side in
    without) t[$side]=$(timed) ;;
    with) t[$side]=$(timed --checkpoint-dir "$work/ckpt") ;;
    inline) t[$side]=$(OAR_CHECKPOINT_WRITES=inline timed --checkpoint-dir "$work/ckpt") ;;
    esac
  done
  w=$(awk -v a="${t[without]}" -v b="${t[with]}" 'BEGIN {printf "%.3f", a / b}')
  i=$(awk -v a="${t[without]}" -v b="${t[inline]}" 'BEGIN {printf "%.3f", a / b}')
  withRatios+=("$w") inlineRatios+=("$i")
  printf '%-6s %12s %12s %12s %18s %18s\n' "$turn" "${t[without]}" "${t[with]}" "${t[inline]}" "$w" "$i"
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "median speed with checkpoints / without: $(median "${withRatios[@]}") (written off the loop thread), $(median "${inlineRatios[@]}") (on it); 1.00: checkpoints cost nothing"
# The last run kept the inline side's or another's directory: write one more to count its files.
rm -rf "$work/ckpt"
timed --checkpoint-dir "$work/ckpt" >/dev/null
steps=$(ls -d "$work"/ckpt/pserver.0/step-* | sed 's/.*step-//' | sort -n | tr '\n' ' ')
last=$(ls -d "$work"/ckpt/pserver.0/step-* | sort -t- -k2 -n | tail -1)
for p in "$work"/ckpt/pserver.*; do
  newest=$(ls -d "$p"/step-* | sort -t- -k2 -n | tail -1)
  printf '%s, %s: %s files, %s bytes\n' "$(basename "$p")" "$(basename "$newest")" \
    "$(find "$newest" -type f | wc -l)" "$(du -sb "$newest" | cut -f1)"
done
echo "checkpoints kept: steps $steps(the newest $(basename "$last"))"
