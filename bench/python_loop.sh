#!/usr/bin/env bash
# A Python training loop against oar-executor and against PyTorch's same loop: the MNIST MLP
# (784-512-256-10, SGD, batch 128) on Fashion-MNIST's 60,000 training rows, 1 epoch, equal threads,
# turns interleaved so that the machine's noise falls on every side alike; each comparison is the
# median of the turns' ratios with its sign-test interval (bench/turn_stats.sh).
# usage: bench/python_loop.sh [TURNS] [THREADS]   (needs build/, python3-torch for the torch side)
set -euo pipefail
cd "$(dirname "$0")/.."
turns=${1:-5} threads=${2:-1}
b=build py=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist
[ -r $data/train-images-idx3-ubyte.gz ] || { echo "python_loop: $data missing (apt-get install dataset-fashion-mnist)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
$b/oar-model --model=mlp --in=784 --hidden=512,256 --out=10 --loss=softmax_with_cross_entropy \
  --optimizer=sgd --lr=0.01 --batch-size=128 --epochs=1 --format=mnist_idx \
  --data=$data/train-images-idx3-ubyte.gz,$data/train-labels-idx1-ubyte.gz -o "$work/mlp" >/dev/null
export PYTHONPATH=$b/python OMP_NUM_THREADS=$threads
# PyTorch set up fairly (docs/benchmarks.md): OpenBLAS-pthreads, its AVX-512 kernels where the CPU has them.
[ -d /usr/lib/x86_64-linux-gnu/openblas-pthread ] || { echo "python_loop: OpenBLAS missing (apt-get install libopenblas0-pthread)"; exit 1; }
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread
grep -qw avx512f /proc/cpuinfo && export OPENBLAS_CORETYPE=SKYLAKEX
have_torch=0
$py -c "import torch" 2>/dev/null && have_torch=1
rate() { grep -o '([0-9]* samples/s)' "$1" | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}'; }
source bench/turn_stats.sh
declare -A rates
for ((t = 0; t < turns; t++)); do
  $b/oar-executor --main "$work/mlp/main.pb" --startup "$work/mlp/startup.pb" --num-threads=$threads >"$work/cli" 2>&1
  rates[cli|$t]=$(rate "$work/cli")
  rates[py|$t]=$($py bench/python_loop.py oar "$work/mlp" $threads | awk '{print $2}')
  line="turn $((t + 1)): oar-executor ${rates[cli|$t]}, oar from a Python loop ${rates[py|$t]}"
  if [ $have_torch = 1 ]; then
    rates[torch|$t]=$($py bench/python_loop.py torch "$work/mlp" $threads | awk '{print $2}')
    line+=", PyTorch from the same loop ${rates[torch|$t]}"
  fi
  echo "$line samples/s"
done
# Medians of the turns' ratios, with the sign test's interval (bench/turn_stats.sh).
r=$(turnRatios rates py cli)
echo "oar from a Python loop / oar-executor, $threads thread(s): $(median "$r") ($(medianInterval "$r")) (above 1: the Python loop is faster)"
if [ $have_torch = 1 ]; then
  r=$(turnRatios rates py torch)
  echo "oar from a Python loop / PyTorch from the same loop: $(median "$r") ($(medianInterval "$r")) (above 1: oar is faster)"
else
  echo "PyTorch: not installed (python3-torch), no comparison"
fi
