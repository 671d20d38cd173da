#!/usr/bin/env bash
# What checkpoints cost a job: the 2 pservers x 2 trainers wide & deep job (oar-gen-ctr's click
# logs, the CTR defaults, 500 rows a trainer a step) run with and without
# `--checkpoint-dir` at the default schedule (--checkpoint-every 100), in turns that alternate
# which goes first, each turn a fresh checkpoint directory. Prints each turn's wall times, the
# median of the turns' ratios (the job's speed with checkpoints over its speed without: 1.00 is
# free), and what one checkpoint of one pserver holds (files and bytes).
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
printf '%-6s %14s %14s %22s\n' turn "without (s)" "with (s)" "speed with / without"
ratios=()
for turn in $(seq "$turns"); do
  rm -rf "$work/ckpt"
  if [ $((turn % 2)) = 1 ]; then
    without=$(timed)
    with=$(timed --checkpoint-dir "$work/ckpt")
  else
    with=$(timed --checkpoint-dir "$work/ckpt")
    without=$(timed)
  fi
  ratio=$(awk -v a="$without" -v b="$with" 'BEGIN {printf "%.3f", a / b}')
  ratios+=("$ratio")
  printf '%-6s %14s %14s %22s\n' "$turn" "$without" "$with" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
echo "median speed with checkpoints / without: $median (1.00: checkpoints cost nothing)"
steps=$(ls -d "$work"/ckpt/pserver.0/step-* | sed 's/.*step-//' | sort -n | tr '\n' ' ')
last=$(ls -d "$work"/ckpt/pserver.0/step-* | sort -t- -k2 -n | tail -1)
for p in "$work"/ckpt/pserver.*; do
  newest=$(ls -d "$p"/step-* | sort -t- -k2 -n | tail -1)
  printf '%s, %s: %s files, %s bytes\n' "$(basename "$p")" "$(basename "$newest")" \
    "$(find "$newest" -type f | wc -l)" "$(du -sb "$newest" | cut -f1)"
done
echo "checkpoints kept: steps $steps(the newest $(basename "$last"))"
