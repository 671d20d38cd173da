#!/usr/bin/env bash
# Serving benchmark: wide & deep with the CTR defaults (26 slots, embedding width 10, MLP
# 400-400-400, 4,194,304 rows a table) trained on one machine on oar-gen-ctr's click logs,
# exported by oar-export; then oar::Predictor (build/bench_predict) and the same model in PyTorch
# (bench/torch_predict.py: Debian's python3-torch on OpenBLAS-pthreads with as many threads,
# eval mode,
# torch.inference_mode) on the same rows, in one run: latency p50/p99 at batch 1 and 256, and
# rows/s at batch 256 with 1 and 2 threads, with each ratio stated as oar over torch; in f32,
# and in bf16 where the CPU has AVX-512 (oar-predict --bf16 against torch's MLP in bfloat16); and
# oar in f32 without its sparse-input layers (bench_predict --no-sparse-inputs).
# Usage: bench/predict.sh [LINES]   (after scripts/setup.sh; default 100000 training lines)
set -euo pipefail
lines=${1:-100000}
cd "$(dirname "$0")/.."
b=build
work=$(mktemp -d /tmp/oar-predict.XXXXXX)
trap 'rm -rf "$work"' EXIT
source bench/ctr_export.sh
ctrExport "$work" "$lines"
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
oarRun() { # oarRun PRECISION ROUND [bench_predict flags]
  local precision=$1 round=$2
  shift 2
  OMP_NUM_THREADS=1 $b/bench_predict "$work/export" --data "$work/data/test.txt" --rows 16384 \
    --seconds 2 "$@" > "$work/oar_$precision.$round.txt" 2>&1
}
oarRun f32 0 --dump "$work/rows"
# bf16: the layers' products in bfloat16 (AMX where the CPU has it); not on CPUs without AVX-512.
precisions=f32
if oarRun bf16 0 --bf16; then
  precisions="f32 bf16"
else
  echo "(no bf16 figures: $(tail -1 "$work/oar_bf16.0.txt"))"
fi
py=/usr/bin/python3
torch=yes
$py -c 'import torch' 2>/dev/null || torch=
[ -n "$torch" ] || echo "(python3-torch is not installed: no torch figures)"
# OpenBLAS's Skylake-X kernels where the CPU has AVX-512 (elsewhere they stop on an illegal
# instruction, and OpenBLAS's own choice is the fast one).
coretype=
grep -qw avx512f /proc/cpuinfo && coretype=SKYLAKEX
torchRun() { # torchRun PRECISION ROUND
  # Two threads: torch's intra-op threads over a 1-thread OpenBLAS, or OpenBLAS's threads too,
  # or two Python threads calling the model at once (as oar's two callers do); the best counts.
  for run in "1 1 1" "2 1 1" "2 2 1" "1 1 2"; do
    read -r threads blas callers <<<"$run"
    env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      ${coretype:+OPENBLAS_CORETYPE=$coretype} OPENBLAS_NUM_THREADS=$blas OMP_NUM_THREADS=$threads \
      $py bench/torch_predict.py --export "$work/export" --rows "$work/rows" --vocab 4194304 \
      --threads $threads --callers $callers --seconds 2 $([ "$run" = "1 1 1" ] && echo --latency) \
      $([ $1 = bf16 ] && echo --bf16) || return 1
  done > "$work/torch_$1.$2.txt"
}
# Rounds, oar and torch in turn within each: this machine's speed drifts by half within minutes,
# so each figure below is the median of its rounds.
rounds=${ROUNDS:-3}
for round in $(seq 1 "$rounds"); do
  for precision in $precisions; do
    oarRun $precision $round $([ $precision = bf16 ] && echo --bf16) ||
      { cat "$work/oar_$precision.$round.txt"; exit 1; }
    # f32 also with every layer on the GEMM: what the sparse-input layers add.
    if [ $precision = f32 ]; then
      oarRun f32gemm $round --no-sparse-inputs || { cat "$work/oar_f32gemm.$round.txt"; exit 1; }
    fi
    if [ -n "$torch" ] && ! torchRun $precision $round; then
      echo "torch_predict.py failed ($precision, round $round)"
      exit 1
    fi
  done
done
cat "$work"/oar_*.1.txt
[ -z "$torch" ] && exit 0
cat "$work"/torch_*.1.txt
median() { sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# FIELD (1: p50, 2: p99) of the latency at batch SIZE, median over the rounds of WHO (oar|torch).
latency() {
  for round in $(seq 1 "$rounds"); do
    grep -F "latency batch $3:" "$work/$1_$2.$round.txt" |
      sed -E 's/.*p50 ([0-9.]+) us, p99 ([0-9.]+) us/\1 \2/' | cut -d' ' -f"$4"
  done | median
}
# Rows/s at batch 256 with THREADS: each round's best form, median over the rounds.
rowsPerSec() {
  for round in $(seq 1 "$rounds"); do
    grep -F "rows/s batch 256, $3 thread" "$work/$1_$2.$round.txt" |
      awk '$NF > best {best = $NF} END {print best}'
  done | median
}
# oar over torch: latency (lower is better: torch's / oar's) and rows/s (oar's / torch's); above
# 1, oar is ahead.
echo "# medians of $rounds rounds"
for precision in $precisions; do
  for size in 1 256; do
    awk -v p=$precision -v s=$size -v a="$(latency oar $precision $size 1)" \
      -v b="$(latency torch $precision $size 1)" -v c="$(latency oar $precision $size 2)" \
      -v d="$(latency torch $precision $size 2)" 'BEGIN {
      if (a == "" || b == "") { printf "%s, latency, batch %s: n/a (a run printed none)\n", p, s; exit }
      printf "%s, latency, batch %s: oar p50 %.0f us, p99 %.0f us; torch p50 %.0f us, p99 %.0f us: oar is %.2fx as fast at p50, %.2fx at p99\n", p, s, a, c, b, d, b / a, d / c}'
  done
  for threads in 1 2; do
    awk -v p=$precision -v t=$threads -v a="$(rowsPerSec oar $precision $threads)" \
      -v b="$(rowsPerSec torch $precision $threads)" 'BEGIN {
      if (a == "" || b == "") { printf "%s, rows/s, batch 256, %s thread(s): n/a\n", p, t; exit }
      printf "%s, rows/s, batch 256, %s thread(s): oar / torch = %.2f (%d / %d)\n", p, t, a / b, a, b}'
  done
done
for threads in 1 2; do
  awk -v t=$threads -v a="$(rowsPerSec oar f32gemm $threads)" -v b="$(rowsPerSec torch f32 $threads)" \
    'BEGIN { if (a != "" && b != "") printf "f32 with every layer on the GEMM (--no-sparse-inputs), rows/s, batch 256, %s thread(s): oar / torch = %.2f (%d / %d)\n", t, a / b, a, b}'
done
