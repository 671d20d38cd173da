#!/usr/bin/env bash
# oar.Predictor called from Python against the C++ Predictor (bench_predict): wide & deep with the
# CTR defaults trained on oar-gen-ctr's click logs and exported, the same dumped rows, batch 256,
# 1 and 2 caller threads (OMP_NUM_THREADS=1), turns interleaved; each comparison is the median of
# the turns' ratios with its sign-test interval (bench/turn_stats.sh).
# usage: bench/python_predict.sh [TURNS] [LINES]   (after scripts/setup.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-5} lines=${2:-20000}
b=build py=/usr/bin/python3
work=$(mktemp -d /tmp/oar-pypredict.XXXXXX)
trap 'rm -rf "$work"' EXIT
source bench/ctr_export.sh
ctrExport "$work" "$lines"
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F)"
export OMP_NUM_THREADS=1 PYTHONPATH=$b/python
$b/bench_predict "$work/export" --data "$work/data/test.txt" --rows 16384 --seconds 1 \
  --dump "$work/rows" >/dev/null
source bench/turn_stats.sh
declare -A rates
for ((t = 0; t < turns; t++)); do
  $b/bench_predict "$work/export" --data "$work/data/test.txt" --rows 16384 --seconds 2 >"$work/cpp"
  $py bench/python_predict.py "$work/export" "$work/rows" 2 >"$work/py"
  for threads in 1 2; do
    rates[cpp$threads|$t]=$(awk -v k="batch 256, $threads thread" 'index($0, k) {print $NF}' "$work/cpp")
    rates[py$threads|$t]=$(awk -v k="batch 256, $threads thread" 'index($0, k) {print $NF}' "$work/py")
  done
  echo "turn $((t + 1)): C++ ${rates[cpp1|$t]} / ${rates[cpp2|$t]}, Python ${rates[py1|$t]} / ${rates[py2|$t]} rows/s (1 / 2 threads)"
done
for threads in 1 2; do
  r=$(turnRatios rates py$threads cpp$threads)
  echo "Predictor from Python / from C++, batch 256, $threads thread(s): $(median "$r") ($(medianInterval "$r")) (above 1: Python is faster)"
done
