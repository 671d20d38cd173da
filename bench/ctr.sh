#!/usr/bin/env bash
# CTR benchmark: wide & deep (26 slots, embedding width 10, MLP 400-400-400, batch 1000,
# Adagrad) on oar-gen-ctr's click logs. One machine against the same model in PyTorch
# (bench/torch_wide_deep.py, nn.Embedding with sparse gradients) at equal thread counts, in the
# same run; then the tables on 2 pservers with 2 trainers as processes (oar-launch, async and
# sync): aggregate examples/s and the bytes a trainer sends per step with and without
# de-duplicating the keys of a batch.
# Usage: bench/ctr.sh [LINES]   (after scripts/setup.sh; default 200000 lines)
set -euo pipefail
# OpenBLAS's Skylake-X kernels only where the CPU has AVX-512 (elsewhere: an illegal instruction).
coretype=
grep -qw avx512f /proc/cpuinfo && coretype=SKYLAKEX
lines=${1:-200000}
cd "$(dirname "$0")/.."
b=build
work=$(mktemp -d /tmp/oar-ctr.XXXXXX)
trap 'rm -rf "$work"' EXIT
$b/oar-gen-ctr --train-lines="$lines" --test-lines=1000 -o "$work/data" >/dev/null
$b/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" -o "$work/single" >/dev/null
# Two trainers of 500 rows a step make the single machine's batch of 1000.
$b/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" --batch-size=500 \
  -o "$work/dist" >/dev/null

# Sum of the trainers' "(R samples/s)" in a log.
rate() { grep -o '([0-9]* samples/s)' "$1" | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}'; }

echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $lines lines"
py=/usr/bin/python3
[ -x $py ] || py=python3
haveTorch=0
$py -c 'import torch' 2>/dev/null && haveTorch=1
printf '%-34s %10s %10s %7s\n' "one machine" "oar" "torch" "ratio"
for threads in 1 2; do
  $b/oar-executor --main "$work/single/main.pb" --startup "$work/single/startup.pb" \
    --num-threads=$threads >"$work/log" 2>&1
  oar=$(rate "$work/log")
  torch=-
  ratio=-
  if [ $haveTorch = 1 ]; then
    # Torch's intra-op threads over a 1-thread OpenBLAS, or OpenBLAS's threads too: the better.
    torch=0
    for blas in $(echo 1 $threads | tr ' ' '\n' | sort -u); do
      r=$(env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
        ${coretype:+OPENBLAS_CORETYPE=$coretype} OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=$blas \
        $py bench/torch_wide_deep.py --data "$work/data/train.txt" --lines "$lines" --threads $threads |
        awk '/samples_per_sec/ {printf "%.0f", $2}')
      [ "$r" -gt "$torch" ] && torch=$r
    done
    ratio=$(awk -v a="$oar" -v b="$torch" 'BEGIN {printf "%.2f", a / b}')
  fi
  printf '%-34s %10s %10s %7s\n' "wide & deep, $threads thread(s), examples/s" "$oar" "$torch" "$ratio"
done
[ $haveTorch = 1 ] || echo "(python3-torch is not installed: no torch column)"

printf '%-34s %10s\n' "2 trainers x 2 pservers" "examples/s"
for mode in async sync; do
  $b/oar-launch --server-num=2 --worker-num=2 --mode=$mode --timeout=600 "$work/dist" \
    >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  printf '%-34s %10s\n' "wide & deep, $mode" "$(rate "$work/log")"
done
grep -m1 'distributed tables:' "$work/log" | sed 's/^\[[^]]*\] //'
