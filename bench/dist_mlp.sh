#!/usr/bin/env bash
# Distributed MLP benchmark with real processes: oar-launch jobs (sync and async, 1x1, 2x1, 2x2)
# against a torch.distributed.rpc parameter server (1 server, 2 trainers; bench/torch_rpc_ps.py)
# in the same run, then thread budgets (oar-launch's default against --num-threads set by hand,
# and a 2-thread run beside a busy process against a 1-thread run alone, turn by turn too). The
# MLP is 784-512-256-10, SGD, batch 128 per trainer, on Fashion-MNIST's 60k training images
# (Debian's dataset-fashion-mnist).
#
# Aggregate samples/s sums each trainer's rate over its steps after the first (its summary
# line). Comparisons between oar's settings take, for each turn, the ratio of two launches run
# one after the other, and print the median of those ratios over the turns: a launch varies by
# up to 10% from the next on a shared machine, in spells that last longer than one launch, so
# neighbours in time compare more fairly than the best of each setting over the whole run. Each
# median comes with the interval that holds the true one with 90% confidence or more (the sign
# test's), so that a ratio near 1 reads as a tie when its interval holds 1.
# Usage: bench/dist_mlp.sh [STEPS_FOR_TORCH] [EPOCHS] [TURNS] [BUDGET_TURNS]
# (after scripts/setup.sh). EPOCHS (default 3) is the length of each oar launch: 3 epochs are
# about 700 steps per trainer, several seconds. TURNS (default 5) is how many times each job
# runs; BUDGET_TURNS (default 9) how many times each thread budget and each side of the busy
# comparison run, as they differ by less.
set -euo pipefail
# OpenBLAS's Skylake-X kernels only where the CPU has AVX-512 (elsewhere: an illegal instruction).
coretype=
grep -qw avx512f /proc/cpuinfo && coretype=SKYLAKEX
torchSteps=${1:-200}
epochs=${2:-3}
turns=${3:-5}
budgetTurnCount=${4:-9}
# oar's defaults are what this measures; an OMP_NUM_THREADS of the caller's would set every
# node's threads instead.
unset OMP_NUM_THREADS
cd "$(dirname "$0")/.."
b=build
data=/usr/share/datasets/fashion-mnist
[ -r $data/train-images-idx3-ubyte.gz ] || { echo "dist_mlp: $data missing (apt-get install dataset-fashion-mnist)"; exit 1; }
work=$(mktemp -d /tmp/oar-dist-mlp.XXXXXX)
busy=""
trap 'rm -rf "$work"; [ -z "$busy" ] || kill "$busy" 2>/dev/null' EXIT
files=$data/train-images-idx3-ubyte.gz,$data/train-labels-idx1-ubyte.gz
$b/oar-model --model=mlp --in=784 --hidden=512,256 --out=10 --loss=softmax_with_cross_entropy \
  --optimizer=sgd --lr=0.01 --batch-size=128 --epochs=$epochs --format=mnist_idx --data=$files \
  -o "$work/mlp" >/dev/null

. bench/turn_stats.sh # turnRatios, median, medianInterval

# Sum of the trainers' "(R samples/s)" in a log.
rate() { grep -o '([0-9]* samples/s)' "$1" | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}'; }

# The node settings a launch's log shows, without where each came from: "2 x pserver: optimizing
# on the socket's thread; 1 compute thread | 2 x trainer: 1 compute thread". Two launches that
# show the same ran alike.
nodeSettings() {
  sed -n -e 's/^\[\(trainer\)\.[0-9]*\] trainer [0-9]*: \([0-9]* compute thread.*\) ([^()]*)$/\1: \2/p' \
    -e 's/^\[\(pserver\)\.[0-9]*\] .*, \(optimizing on .* compute thread.*\) ([^()]*)$/\1: \2/p' "$1" |
    sort | uniq -c | awk '{n = $1; $1 = ""; printf "%s%d x%s", (NR > 1 ? " | " : ""), n, $0}'
}

# keepBest MAP KEY RATE: MAP[KEY] becomes RATE when RATE is higher.
keepBest() {
  local -n map=$1
  if [ "$3" -gt "${map[$2]:-0}" ]; then map[$2]=$3; fi
}

# bestOf MAP KEY: the highest of MAP[KEY|turn] over the turns it holds.
bestOf() {
  local -n map=$1
  local t best=0
  for ((t = 0; ; t++)); do
    [ -n "${map[$2|$t]+held}" ] || break
    if [ "${map[$2|$t]}" -gt "$best" ]; then best=${map[$2|$t]}; fi
  done
  echo "$best"
}

# [curve=--curve=false] oar-launch SERVERS WORKERS MODE [-- node flags]: prints the aggregate
# samples/s.
launch() {
  local s=$1 w=$2 mode=$3
  shift 3
  $b/oar-launch --server-num=$s --worker-num=$w --mode=$mode --timeout=600 ${curve:-} "$work/mlp" "$@" \
    >"$work/log" 2>&1 || { tail -20 "$work/log"; exit 1; }
  rate "$work/log"
}

echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
single=$($b/oar-executor --main "$work/mlp/main.pb" --startup "$work/mlp/startup.pb" --num-threads=1 | tee "$work/single" >/dev/null; rate "$work/single")
echo "single machine, 1 thread: $single samples/s"
# oar-launch's default encrypts (CURVE); torch's RPC does not, so the ratios below compare
# the plain-TCP runs (--curve=false), and the CURVE column shows what encryption costs.
# Each job keeps its best of the turns (as torch keeps its best of 3), the jobs interleaved;
# async against sync is the median of their ratios turn by turn. The "socket" job turns
# off the same-host peer-memory path (OAR_PEER_MEMORY=0), the "dealer" job the trainers' direct
# links (OAR_DIRECT_LINKS=0: libzmq's DEALER and its I/O thread; docs/runtime.md), to show their
# shares. With CURVE, trainers always go through libzmq.
jobs=("1 1 sync" "1 2 sync" "2 2 sync" "1 2 async" "2 2 async" "1 2 sync socket" "1 2 sync dealer")
declare -A oarTurns oarCurveTurns # rates by "job|turn"
# Each turn starts one job later: the first launch of a turn runs slower (measured: a setting
# run first in each of six pairs lost five), and no job should always take that place.
for ((turn = 0; turn < turns; turn++)); do
  for k in "${!jobs[@]}"; do
    job=${jobs[$(((k + turn) % ${#jobs[@]}))]}
    set -- $job
    peerMemory=1 links=1
    [ "${4:-}" = socket ] && peerMemory=0
    [ "${4:-}" = dealer ] && links=0
    # an assignment, so that a failed launch ends the script
    r=$(OAR_PEER_MEMORY=$peerMemory OAR_DIRECT_LINKS=$links curve=--curve=false launch $1 $2 $3)
    oarTurns[$job|$turn]=$r
    r=$(OAR_PEER_MEMORY=$peerMemory OAR_DIRECT_LINKS=$links launch $1 $2 $3)
    oarCurveTurns[$job|$turn]=$r
  done
done
printf '%-28s %12s %12s\n' "job (oar-launch, best of $turns)" "samples/s" "with CURVE"
for job in "${jobs[@]}"; do
  set -- $job
  printf '%-28s %12s %12s\n' "$2 trainers x $1 pservers $3${4:+ ($4)}" "$(bestOf oarTurns "$job")" "$(bestOf oarCurveTurns "$job")"
done
for s in 1 2; do
  r=$(turnRatios oarTurns "$s 2 async" "$s 2 sync")
  echo "async / sync, 2 trainers x $s pservers: median $(median "$r"), interval $(medianInterval "$r") (turn by turn: $r)"
done

# Debian's python3-torch belongs to Debian's python3, which a pyenv or venv on PATH may hide.
py=/usr/bin/python3
[ -x $py ] || py=python3
if $py -c 'import torch' 2>/dev/null; then
  # Torch set up fairly (OpenBLAS with pthreads, the right core type), 1 thread per process.
  torchEnv=(env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
            ${coretype:+OPENBLAS_CORETYPE=$coretype} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1)
  # The best of 3 runs for each of TensorPipe's transports: TCP, and its default (shared memory
  # and cross-memory attach on one host, as oar reads a same-host peer's memory by default).
  # Its rate varies more from run to run than oar's does. The ratio takes the faster one.
  declare -A torchBest
  for run in 1 2 3; do
    for transport in tcp default; do
      port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      r=$("${torchEnv[@]}" $py bench/torch_rpc_ps.py --trainers 2 --threads 1 --steps "$torchSteps" --port "$port" \
        --transport $transport --images $data/train-images-idx3-ubyte.gz \
        --labels $data/train-labels-idx1-ubyte.gz 2>/dev/null | awk '/aggregate_samples_per_sec/ {printf "%.0f", $2}')
      echo "torch rpc run $run, transport $transport: $r samples/s"
      keepBest torchBest $transport "${r:-0}"
    done
  done
  torch=${torchBest[tcp]}
  [ "${torchBest[default]}" -gt "$torch" ] && torch=${torchBest[default]}
  printf '%-28s %12s\n' "torch rpc: 2 trainers x 1 ps" "tcp ${torchBest[tcp]}, default ${torchBest[default]} (best of 3 each)"
  for job in "1 2 sync" "2 2 sync"; do
    set -- $job
    echo "oar sync, 2 trainers x $1 pservers / torch rpc: $(awk -v a="$(bestOf oarTurns "$job")" -v b="$torch" 'BEGIN {printf "%.2f", a / b}')"
  done
else
  echo "torch rpc: skipped (python3-torch is not installed)"
fi

# The five settings run in each turn, interleaved; each is compared with the default launched
# in the same turn, and the median of those ratios is printed with its interval: one run of a
# setting varies by 5-10% between runs, as much as the settings differ. Each setting's node
# settings, as the nodes' first lines give them, show which launches ran alike (on 2 cores with
# 2 trainers, the default is OMP_NUM_THREADS=1's setting: their gap is the noise).
echo "# thread budget, 2 trainers x 2 pservers sync ($budgetTurnCount interleaved turns)"
# Set by hand as a user would: OMP_NUM_THREADS, which every node then uses (pservers for their
# service threads), instead of each node's share.
budgets=("oar-launch default|" "OMP_NUM_THREADS=1|1" "OMP_NUM_THREADS=1, OMP_WAIT_POLICY=ACTIVE|1 ACTIVE"
         "OMP_NUM_THREADS=2|2" "OMP_NUM_THREADS=2, OMP_WAIT_POLICY=ACTIVE|2 ACTIVE")
declare -A budgetTurns budgetSettings # rates by "budget|turn"; node settings by budget
for ((turn = 0; turn < budgetTurnCount; turn++)); do
  for k in "${!budgets[@]}"; do # rotated, as the jobs above
    budget=${budgets[$(((k + turn) % ${#budgets[@]}))]}
    read -r threads policy <<<"${budget#*|}"
    if [ -z "$threads" ]; then r=$(launch 2 2 sync)
    elif [ -z "$policy" ]; then r=$(OMP_NUM_THREADS=$threads launch 2 2 sync)
    else r=$(OMP_NUM_THREADS=$threads OMP_WAIT_POLICY=$policy launch 2 2 sync); fi
    budgetTurns[$budget|$turn]=$r
    budgetSettings[$budget]=$(nodeSettings "$work/log")
  done
done
default=$(bestOf budgetTurns "${budgets[0]}")
for budget in "${budgets[@]}"; do
  r=$(turnRatios budgetTurns "$budget" "${budgets[0]}")
  best=$(bestOf budgetTurns "$budget")
  if [ "$budget" = "${budgets[0]}" ]; then
    echo "${budget%%|*}: best $best"
    echo "  nodes: ${budgetSettings[$budget]}"
    continue
  fi
  interval=$(medianInterval "$r")
  verdict=$(awk -v i="$interval" 'BEGIN {split(i, b, "[- ]"); print (i == "none" ? "too few turns to tell" : b[2] < 1 ? "slower than the default" : b[1] > 1 ? "FASTER than the default" : "a tie with the default within the noise")}')
  echo "${budget%%|*}: best $best ($(awk -v a="$best" -v b="$default" 'BEGIN {printf "%.3f", a / b}') of the default's best); turn by turn / the default: median $(median "$r"), interval $interval: $verdict (turn by turn: $r)"
  if [ "${budgetSettings[$budget]}" = "${budgetSettings[${budgets[0]}]}" ]; then
    echo "  nodes: the default's settings, so its ratios measure the noise between like launches"
  else echo "  nodes: ${budgetSettings[$budget]}"; fi
done

echo "# single machine beside a busy 1-thread process ($budgetTurnCount turns)"
declare -A singleTurns
# singleRun KEY THREADS [busy]: one single-machine run for singleTurns[KEY|$turn], beside a
# spinning process with "busy".
singleRun() {
  if [ "${3:-}" = busy ]; then sh -c 'while :; do :; done' & busy=$!; fi
  singleTurns[$1|$turn]=$($b/oar-executor --main "$work/mlp/main.pb" --startup "$work/mlp/startup.pb" --num-threads=$2 >"$work/single"; rate "$work/single")
  if [ -n "$busy" ]; then kill $busy; busy=""; fi
}
for ((turn = 0; turn < budgetTurnCount; turn++)); do # each side goes first in every other turn
  if ((turn % 2 == 0)); then singleRun one 1; singleRun two 2 busy
  else singleRun two 2 busy; singleRun one 1; fi
done
r=$(turnRatios singleTurns two one)
echo "1 thread alone: best $(bestOf singleTurns one); 2 threads beside a busy process: best $(bestOf singleTurns two); median of the turns' ratios $(median "$r"), interval $(medianInterval "$r") (turn by turn: $r)"
