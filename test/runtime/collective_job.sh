#!/usr/bin/env bash
# Runs a collective job's trainers by hand, as separate processes that learn their place from a
# launch convention's variables, optionally killing one once trainer 0 has trained a step.
# Usage: collective_job.sh BIN MODEL_DIR OUT_DIR PORT TRAINERS VICTIM [oar-executor flags...]
#   PORT: trainer 0's rendezvous port; PORT_FD (environment): a listening socket bound there that
#     this script inherits and hands to trainer 0 (OAR_LISTEN_FD).
#   VICTIM: none | trainer.N (killed with SIGKILL)
#   CONVENTION (environment): paddle (PADDLE_TRAINER_ENDPOINTS, PADDLE_CURRENT_ENDPOINT,
#     PADDLE_TRAINER_ID, PADDLE_TRAINERS_NUM, as Paddle's collective launch sets them; default) or
#     tf (TF_CONFIG with a chief and workers, no ps) or mindspore (MS_ROLE and the scheduler's
#     MS_SCHED_HOST, MS_SCHED_PORT, MS_SERVER_NUM=0, MS_WORKER_NUM: a scheduler is started at PORT
#     too, and the trainers learn trainer 0's endpoint from it).
# Prints "<node> <exit status> <ms from the kill to its end>" for each trainer.
set -u
bin=$1 model=$2 out=$3 port=$4 trainers=$5 victim=$6
shift 6
mkdir -p "$out"
# The other trainers' endpoints are listed as the conventions list them; their pairs listen on
# ports Gloo picks, so only the host of each is used.
endpoints="127.0.0.1:$port"
tfWorkers=""
for ((i = 1; i < trainers; i++)); do
  endpoints="$endpoints,127.0.0.1:$((port + i))"
  tfWorkers="$tfWorkers${tfWorkers:+,}\"127.0.0.1:$((port + i))\""
done
declare -A pids
ms=(MS_SCHED_HOST=127.0.0.1 "MS_SCHED_PORT=$port" MS_SERVER_NUM=0 "MS_WORKER_NUM=$trainers")
scheduler=""
if [ "${CONVENTION:-paddle}" = mindspore ]; then # it serves at PORT, the trainers pick their own
  env ${PORT_FD:+"OAR_LISTEN_FD=$PORT_FD"} MS_ROLE=MS_SCHED "${ms[@]}" OAR_JOB_ID=collective-test \
    timeout 120 "$bin/oar-executor" >"$out/scheduler.log" 2>&1 &
  scheduler=$!
fi
for ((i = 0; i < trainers; i++)); do
  fd=()
  [ "$i" = 0 ] && [ -n "${PORT_FD:-}" ] && [ -z "$scheduler" ] && fd=("OAR_LISTEN_FD=$PORT_FD")
  case "${CONVENTION:-paddle}" in
  paddle)
    conv=("PADDLE_TRAINER_ENDPOINTS=$endpoints" "PADDLE_CURRENT_ENDPOINT=127.0.0.1:$((port + i))"
      "PADDLE_TRAINER_ID=$i" "PADDLE_TRAINERS_NUM=$trainers") ;;
  tf)
    task=$([ "$i" = 0 ] && echo '"type":"chief","index":0' || echo "\"type\":\"worker\",\"index\":$((i - 1))")
    conv=("TF_CONFIG={\"cluster\":{\"chief\":[\"127.0.0.1:$port\"],\"worker\":[$tfWorkers]},\"task\":{$task}}") ;;
  mindspore)
    conv=(MS_ROLE=MS_WORKER "${ms[@]}") ;;
  esac
  ( # its status and when it ended (ns), written as it ends
    env "${fd[@]}" "${conv[@]}" OAR_JOB_ID=collective-test timeout 120 "$bin/oar-executor" \
      --main "$model/main.pb" --startup "$model/startup.pb" --mode collective --num-threads=1 \
      "$@" >"$out/trainer.$i.log" 2>&1
    echo "$? $(date +%s%N)" >"$out/trainer.$i.end"
  ) &
  pids[trainer.$i]=$!
done
killedAt=""
if [ "$victim" != none ]; then
  for _ in $(seq 1200); do # up to 60 s for trainer 0's first step
    grep -q "step " "$out/trainer.0.log" && break
    sleep 0.05
  done
  # The subshell runs `timeout`, which runs oar-executor as its child: kill that, as a crash would.
  child=$(pgrep -P "$(pgrep -P "${pids[$victim]}" -x timeout)")
  [ -n "$child" ] && kill -KILL "$child"
  killedAt=$(date +%s%N)
fi
for ((i = 0; i < trainers; i++)); do
  wait "${pids[trainer.$i]}"
  read -r status endedAt <"$out/trainer.$i.end"
  echo "trainer.$i $status $(((endedAt - ${killedAt:-$endedAt}) / 1000000))"
done
if [ -n "$scheduler" ]; then
  wait "$scheduler"
  echo "scheduler exit status $?"
fi
