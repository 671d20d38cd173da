#!/usr/bin/env bash
# Runs 2 pservers and 2 trainers as separate processes, optionally killing one of them.
# Usage: run_job.sh BIN_DIR MODEL_DIR OUT_DIR PORT0 PORT1 VICTIM KILL_AFTER [oar-executor flags...]
#   VICTIM: none | pserver.0 | pserver.1 | trainer.0 | trainer.1 (killed with SIGKILL)
# Prints one "<node> <exit status>" line per node. Every node runs under `timeout 120`, so a
# hang shows as status 124 instead of hanging the test.
set -u
bin=$1 model=$2 out=$3 p0=$4 p1=$5 victim=$6 after=$7
shift 7
mkdir -p "$out"
list="127.0.0.1:$p0,127.0.0.1:$p1"
declare -A pids
for i in 0 1; do
  port=$([ $i = 0 ] && echo "$p0" || echo "$p1")
  PADDLE_TRAINING_ROLE=PSERVER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS=2 \
    PADDLE_CURRENT_ENDPOINT=127.0.0.1:$port timeout 120 "$bin/oar-executor" \
    --main "$model/main.pb" --startup "$model/startup.pb" "$@" >"$out/pserver.$i.log" 2>&1 &
  pids[pserver.$i]=$!
done
for i in 0 1; do
  PADDLE_TRAINING_ROLE=TRAINER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS=2 \
    PADDLE_TRAINER_ID=$i timeout 120 "$bin/oar-executor" \
    --main "$model/main.pb" --startup "$model/startup.pb" "$@" >"$out/trainer.$i.log" 2>&1 &
  pids[trainer.$i]=$!
done
if [ "$victim" != none ]; then
  sleep "$after"
  # `timeout` runs oar-executor as its child: kill that child, as a crash would.
  pkill -KILL -P "${pids[$victim]}"
fi
for node in pserver.0 pserver.1 trainer.0 trainer.1; do
  wait "${pids[$node]}"
  echo "$node $?"
done
