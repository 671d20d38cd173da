#!/usr/bin/env bash
# Trains across four network namespaces (2 pservers, 2 trainers) joined by veth pairs to a
# bridge in a fifth namespace. Needs root and iproute2. Addresses live only inside these
# namespaces, which this script creates and always deletes.
# Usage: netns_job.sh BIN_DIR MODEL_DIR OUT_DIR
set -u
bin=$1 model=$2 out=$3
tag=oar$$
net=10.231.77
nodes=(ps0 ps1 tr0 tr1)
mkdir -p "$out"
cleanup() {
  for n in "${nodes[@]}" sw; do ip netns del "$tag-$n" 2>/dev/null; done
}
trap cleanup EXIT
set -e
ip netns add "$tag-sw"
ip -n "$tag-sw" link add br0 type bridge
ip -n "$tag-sw" link set br0 up
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
done
set +e
list="$net.1:6170,$net.2:6170"
for i in 0 1; do
  ip netns exec "$tag-ps$i" env PADDLE_TRAINING_ROLE=PSERVER PADDLE_PSERVERS_IP_PORT_LIST=$list \
    PADDLE_TRAINERS=2 PADDLE_CURRENT_IP=$net.$((i + 1)) PADDLE_PSERVER_PORT=6170 \
    timeout 120 "$bin/oar-executor" --main "$model/main.pb" --startup "$model/startup.pb" \
    --bind 0.0.0.0:6170 >"$out/pserver.$i.log" 2>&1 &
  pids[$i]=$!
done
for i in 0 1; do
  ip netns exec "$tag-tr$i" env PADDLE_TRAINING_ROLE=TRAINER PADDLE_PSERVERS_IP_PORT_LIST=$list \
    PADDLE_TRAINERS=2 PADDLE_TRAINER_ID=$i \
    timeout 120 "$bin/oar-executor" --main "$model/main.pb" --startup "$model/startup.pb" \
    >"$out/trainer.$i.log" 2>&1 &
  pids[$((i + 2))]=$!
done
names=(pserver.0 pserver.1 trainer.0 trainer.1)
for i in 0 1 2 3; do
  wait "${pids[$i]}"
  echo "${names[$i]} $?"
done
