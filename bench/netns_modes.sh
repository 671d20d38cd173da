#!/usr/bin/env bash
# PS against collective against hybrid across hosts: every node in its own network namespace,
# joined by veth pairs to a bridge, each link shaped to 1 Gbit/s (tc tbf, both directions), so
# no same-host shortcut applies (no loopback, no peer memory, no direct IPC links). Jobs, in
# turns (the jobs interleaved):
#   - the MNIST MLP (784-512-256-10, SGD, batch 128 a trainer, Fashion-MNIST): sync PS
#     (2 pservers x 2 trainers) and collective (2 trainers);
#   - wide & deep on oar-gen-ctr's lines (batch 500 a trainer, tables of 65,536 rows): sync PS
#     (2 x 2, every param on the pservers) and hybrid (2 x 2: tables on the pservers, the dense
#     towers all-reduced).
# Prints each job's aggregate samples/s (the best of the turns) and the bytes trainer 0 sends
# and receives a step (its link's counters over the job, over its steps). Needs root, iproute2 and tc.
# Usage: bench/netns_modes.sh [TURNS] [CTR_LINES] (after scripts/setup.sh; default 3, 100000);
# OAR_BENCH_JOBS="mlp_sync mlp_collective wd_sync wd_hybrid" (the default) picks the jobs.
set -euo pipefail
turns=${1:-3}
lines=${2:-100000}
cd "$(dirname "$0")/.."
b=$PWD/build
data=/usr/share/datasets/fashion-mnist
[ "$(id -u)" = 0 ] || { echo "netns_modes: needs root (network namespaces)"; exit 1; }
[ -r $data/train-images-idx3-ubyte.gz ] || { echo "netns_modes: $data missing (apt-get install dataset-fashion-mnist)"; exit 1; }
tag=oarb$$
net=10.231.78
nodes=(ps0 ps1 tr0 tr1)
work=$(mktemp -d /tmp/oar-netns-modes.XXXXXX)
cleanup() {
  for n in "${nodes[@]}" sw; do ip netns del "$tag-$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
ip netns add "$tag-sw"
ip -n "$tag-sw" link add br0 type bridge
ip -n "$tag-sw" link set br0 up
# shape NS DEV: 1 Gbit/s out of DEV (this kernel has no netem, so no added delay).
shape() { ip netns exec "$1" tc qdisc add dev "$2" root tbf rate 1gbit burst 256kb latency 20ms; }
for i in 0 1 2 3; do
  n=${nodes[$i]}
  ip netns add "$tag-$n"
  ip link add "$tag-a$i" type veth peer name "$tag-b$i"
  ip link set "$tag-a$i" netns "$tag-$n"
  ip link set "$tag-b$i" netns "$tag-sw"
  ip -n "$tag-sw" link set "$tag-b$i" master br0 up
  ip -n "$tag-$n" addr add "$net.$((i + 1))/24" dev "$tag-a$i"
  ip -n "$tag-$n" link set "$tag-a$i" up
  ip -n "$tag-$n" link set lo up
  shape "$tag-$n" "$tag-a$i"
  shape "$tag-sw" "$tag-b$i"
done
ps=("$net.1" "$net.2") tr=("$net.3" "$net.4")

"$b"/oar-model --model=mlp --in=784 --hidden=512,256 --out=10 --loss=softmax_with_cross_entropy \
  --optimizer=sgd --lr=0.01 --batch-size=128 --epochs=1 --format=mnist_idx \
  --data=$data/train-images-idx3-ubyte.gz,$data/train-labels-idx1-ubyte.gz -o "$work/mlp" >/dev/null
"$b"/oar-gen-ctr --train-lines="$lines" --test-lines=1000 -o "$work/ctr" >/dev/null
"$b"/oar-model --model=wide_deep --format=criteo --data="$work/ctr/train.txt" --vocab=65536 \
  --batch-size=500 -o "$work/wd" >/dev/null

# linkBytes tx|rx: what trainer 0's link has carried out of or into it.
linkBytes() { ip netns exec "$tag-tr0" cat "/sys/class/net/$tag-a2/statistics/$1_bytes"; }

# run MODEL MODE: one job across the namespaces (MODE: sync, collective or hybrid); prints
# "SAMPLES_PER_S SENT_PER_STEP RECEIVED_PER_STEP" (trainer 0's bytes).
run() {
  local model=$1 mode=$2 pids=() i sentBefore receivedBefore steps rate
  local list="${ps[0]}:6170,${ps[1]}:6170"
  local common=(--main "$work/$model/main.pb" --startup "$work/$model/startup.pb" --num-threads=1
                --mode="$mode")
  [ "$mode" != sync ] && common+=(--rendezvous="${tr[0]}:6200")
  rm -f "$work"/*.log
  sentBefore=$(linkBytes tx) receivedBefore=$(linkBytes rx)
  if [ "$mode" != collective ]; then
    for i in 0 1; do
      ip netns exec "$tag-ps$i" env PADDLE_TRAINING_ROLE=PSERVER PADDLE_PSERVERS_IP_PORT_LIST="$list" \
        PADDLE_TRAINERS=2 PADDLE_CURRENT_ENDPOINT="${ps[$i]}:6170" \
        timeout 600 "$b/oar-executor" "${common[@]}" --bind 0.0.0.0:6170 >"$work/pserver.$i.log" 2>&1 &
      pids+=($!)
    done
  fi
  for i in 0 1; do
    local role=(PADDLE_TRAINING_ROLE=TRAINER PADDLE_PSERVERS_IP_PORT_LIST="$list" PADDLE_TRAINERS=2)
    [ "$mode" = collective ] && role=(PADDLE_TRAINER_ENDPOINTS="${tr[0]}:6200,${tr[1]}:6200")
    local serve=() # trainer 0 serves the rendezvous to the other host
    [ "$mode" != sync ] && [ "$i" = 0 ] && serve=(--bind 0.0.0.0:6200)
    ip netns exec "$tag-tr$i" env "${role[@]}" PADDLE_TRAINER_ID=$i \
      PADDLE_CURRENT_ENDPOINT="${tr[$i]}:6200" timeout 600 "$b/oar-executor" "${common[@]}" \
      "${serve[@]}" ${OAR_BENCH_TRAINER_FLAGS:-} >"$work/trainer.$i.log" 2>&1 &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || { tail -n 5 "$work"/*.log >&2; exit 1; }; done
  # Namespaces are hosts to oar: its same-host shared memory must not apply here.
  if grep -q "through shared memory" "$work"/trainer.*.log; then
    echo "netns_modes: a trainer used same-host shared memory across namespaces" >&2
    exit 1
  fi
  steps=$(sed -n 's/^trainer 0: trained \([0-9]*\) steps.*/\1/p' "$work/trainer.0.log")
  rate=$(grep -ho '([0-9]* samples/s)' "$work"/trainer.*.log | tr -d '(' | awk '{s += $1} END {printf "%.0f", s}')
  echo "$rate $((($(linkBytes tx) - sentBefore) / steps)) $((($(linkBytes rx) - receivedBefore) / steps))"
}

echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date +%F)"
echo "# each node in its own network namespace, links shaped to 1 Gbit/s (tbf), $lines CTR lines"
read -r -a jobs <<<"${OAR_BENCH_JOBS:-mlp_sync mlp_collective wd_sync wd_hybrid}"
declare -A best sent received
for ((t = 0; t < turns; t++)); do
  for job in "${jobs[@]}"; do
    read -r r s g <<<"$(run "${job%_*}" "${job#*_}")"
    echo "turn $t: $job: $r samples/s; trainer 0 sends $s bytes a step, receives $g"
    if [ "$r" -gt "${best[$job]:-0}" ]; then best[$job]=$r; fi
    sent[$job]=$s received[$job]=$g
  done
done
printf '%-34s %12s %16s %16s\n' "job (2 trainers, best of $turns)" "samples/s" "sent/step" "received/step"
for job in "${jobs[@]}"; do
  printf '%-34s %12s %16s %16s\n' "$job" "${best[$job]}" "${sent[$job]}" "${received[$job]}"
done
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
if [ -n "${best[mlp_collective]:-}" ] && [ -n "${best[mlp_sync]:-}" ]; then
  echo "MLP: collective / sync PS samples/s (above 1: collective is faster): $(ratio "${best[mlp_collective]}" "${best[mlp_sync]}")"
fi
if [ -n "${best[wd_hybrid]:-}" ] && [ -n "${best[wd_sync]:-}" ]; then
  echo "wide & deep: hybrid / sync PS samples/s (above 1: hybrid is faster): $(ratio "${best[wd_hybrid]}" "${best[wd_sync]}")"
fi
