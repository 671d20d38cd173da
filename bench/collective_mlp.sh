#!/usr/bin/env bash
# Collective MLP benchmark with real processes: oar-launch --mode collective (2 trainers, no
# pserver; all-reduces through shared memory, as on one host, and with OAR_LOCAL_TCP=1 on
# Gloo's TCP ring, as across hosts) against PyTorch DistributedDataParallel on gloo
# (bench/torch_ddp_mlp.py) and against oar's own sync parameter-server job (1 pserver, 2
# trainers), in the same run. The MLP is
# 784-512-256-10, SGD, batch 128 a trainer, on Fashion-MNIST's 60k training images (Debian's
# dataset-fashion-mnist); every process has 1 compute thread.
#
# Aggregate samples/s sums each trainer's rate over its steps after the first. Each turn runs
# the three jobs one after the other; a ratio is the median of the turns' ratios with its
# sign-test interval (bench/turn_stats.sh), so that a ratio near 1 reads as a tie when its
# interval holds 1.
# Usage: bench/collective_mlp.sh [TURNS] [EPOCHS] (after scripts/setup.sh; default 5 and 1:
# one epoch is 234 steps a trainer, torch runs as many).
set -euo pipefail
coretype=
grep -qw avx512f /proc/cpuinfo && coretype=SKYLAKEX
turns=${1:-5}
epochs=${2:-1}
unset OMP_NUM_THREADS
cd "$(dirname "$0")/.."
b=build
. bench/turn_stats.sh # turnRatios, median, medianInterval
data=/usr/share/datasets/fashion-mnist
[ -r $data/train-images-idx3-ubyte.gz ] || { echo "collective_mlp: $data missing (apt-get install dataset-fashion-mnist)"; exit 1; }
py=/usr/bin/python3 # Debian's python3-torch belongs to Debian's python3
$py -c 'import torch' 2>/dev/null || { echo "collective_mlp: python3-torch missing (apt-get install python3-torch)"; exit 1; }
# Without it torch falls back to the reference BLAS, 30x slower: no fair peer.
[ -d /usr/lib/x86_64-linux-gnu/openblas-pthread ] || { echo "collective_mlp: OpenBLAS missing (apt-get install libopenblas0-pthread)"; exit 1; }
work=$(mktemp -d /tmp/oar-collective-mlp.XXXXXX)
trap 'rm -rf "$work"' EXIT
files=$data/train-images-idx3-ubyte.gz,$data/train-labels-idx1-ubyte.gz
$b/oar-model --model=mlp --in=784 --hidden=512,256 --out=10 --loss=softmax_with_cross_entropy \
  --optimizer=sgd --lr=0.01 --batch-size=128 --epochs="$epochs" --format=mnist_idx --data=$files \
  -o "$work/mlp" >/dev/null
steps=$((60000 * epochs / 256))

# Sum of the trainers' "(R samples/s)" in a log.
rate() { grep -o '([0-9]* samples/s)' "$1" | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}'; }

# oar-launch JOB: collective (2 trainers) or ps (1 pserver, 2 trainers, sync); plain TCP on both,
# as torch's gloo runs (--curve=false), 1 thread a node.
launch() {
  local job=(--mode=collective) tcp=()
  [ "$1" = ps ] && job=(--mode=sync --server-num=1 --curve=false --server-threads=1)
  [ "$1" = tcp ] && tcp=(OAR_LOCAL_TCP=1) # Gloo's TCP ring, as across hosts
  env "${tcp[@]}" $b/oar-launch "${job[@]}" --worker-num=2 --worker-threads=1 --timeout=600 "$work/mlp" \
    >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  rate "$work/log"
}

ddp() {
  local port
  port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    ${coretype:+OPENBLAS_CORETYPE=$coretype} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    $py bench/torch_ddp_mlp.py --trainers 2 --threads 1 --steps "$steps" --port "$port" \
    --images $data/train-images-idx3-ubyte.gz --labels $data/train-labels-idx1-ubyte.gz 2>/dev/null |
    awk '/aggregate_samples_per_sec/ {printf "%.0f", $2}'
}

echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date +%F)"
declare -A turnsOf # rates by "job|turn"
for ((t = 0; t < turns; t++)); do
  # Each turn starts one job later, so that no job always runs first.
  order=(collective tcp ps ddp collective tcp ps)
  for job in "${order[@]:$((t % 4)):4}"; do
    if [ "$job" = ddp ]; then turnsOf[ddp|$t]=$(ddp); else turnsOf[$job|$t]=$(launch "$job"); fi
  done
  echo "turn $t: oar collective ${turnsOf[collective|$t]}, oar collective on TCP ${turnsOf[tcp|$t]}, oar sync PS ${turnsOf[ps|$t]}, torch DDP ${turnsOf[ddp|$t]} samples/s"
done
declare -A names=([collective]="oar collective" [tcp]="oar collective on TCP" [ps]="oar sync PS, 1 pserver" [ddp]="torch DDP gloo")
for pair in "collective ddp" "tcp ddp" "collective ps"; do
  read -r top bottom <<<"$pair"
  r=$(turnRatios turnsOf "$top" "$bottom")
  echo "${names[$top]} / ${names[$bottom]} (samples/s, 2 trainers; above 1: ${names[$top]} is faster): median $(median "$r"), interval $(medianInterval "$r") (turn by turn: $r)"
done
