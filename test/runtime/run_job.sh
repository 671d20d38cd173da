#!/usr/bin/env bash
# Runs 2 pservers and 2 trainers as separate processes, optionally killing one of them.
# Usage: run_job.sh BIN_DIR MODEL_DIR OUT_DIR PORT0 PORT1 VICTIM KILL_AFTER [oar-executor flags...]
#   VICTIM: none | pserver.0 | pserver.1 | trainer.0 | trainer.1 (killed with SIGKILL)
#   CONVENTION (environment, default paddle1): how each node learns its role, as a site's launcher
#   would tell it: paddle1 (PADDLE_TRAINING_ROLE ...), paddle2 (fleet's TRAINING_ROLE, POD_IP,
#   PADDLE_PORT ...), tf (TF_CONFIG with a chief and a worker), or through a scheduler that a
#   fifth node serves at PORT0 (it then prints "scheduler STATUS" too): pslite (DMLC_*) or
#   mindspore (MS_*); their pservers pick their own ports.
#   RESTART_AFTER (environment): start VICTIM again this many seconds after killing it.
#   VICTIM_WAIT_FOR (environment): AFTER counts from when VICTIM's log (or that of the node
#   VICTIM_WAIT_IN names) has this text (waits up to 60 s), not from the start: a slow build
#   (the sanitizers) starts slowly.
#   VICTIM_SIGNAL (environment, default KILL): the signal VICTIM gets; another than KILL (USR1
#   asks a pserver for a checkpoint) leaves it running.
#   VICTIM_SIGNALS (environment, default 1): send it this many times, 2 ms apart, while VICTIM
#   runs.
#   VICTIM_RESUME_AFTER (environment): send VICTIM SIGCONT this many seconds after its signal
#   (with VICTIM_SIGNAL=STOP: a node stalled for that long).
#   SCHEDULER_FLAGS (environment): flags for the scheduler node (pslite, mindspore).
#   SECOND_VICTIM, SECOND_AFTER (environment, with RESTART_AFTER): SIGKILL this node too,
#   SECOND_AFTER seconds after VICTIM was started again (while the job recovers from the first
#   loss), and start it again RESTART_AFTER seconds later (not if it had ended by itself).
#   PORT_FDS (environment): "FD0 FD1", listening sockets this script inherits, bound at PORT0 and
#   PORT1. The node serving each port (pserver I; the scheduler at PORT0) takes its socket over
#   (OAR_LISTEN_FD) at every start, so no other process can take the port, even while a killed
#   node is down.
#   RENDEZVOUS_FD (environment): a listening socket this script inherits, handed to trainer 0
#   (OAR_LISTEN_FD): the rendezvous of a hybrid job's trainers (--rendezvous in the flags).
# Prints one "<node> <exit status>" line per node. Every node runs under `timeout 120`, so a
# hang shows as status 124 instead of hanging the test.
set -u
bin=$1 model=$2 out=$3 p0=$4 p1=$5 victim=$6 after=$7
shift 7
mkdir -p "$out"
list="127.0.0.1:$p0,127.0.0.1:$p1"
ports=("$p0" "$p1")
read -r -a fds <<<"${PORT_FDS:-}"
# listenFd INDEX: the variable that hands port INDEX's socket to the node serving it.
listenFd() {
  [ ${#fds[@]} -gt 0 ] && echo "OAR_LISTEN_FD=${fds[$1]}"
}
# nodeEnv ROLE INDEX: the variables that make node ROLE.INDEX of this job.
nodeEnv() {
  local role=$1 i=$2
  case "${CONVENTION:-paddle1}" in
  paddle1)
    if [ "$role" = pserver ]; then
      echo PADDLE_TRAINING_ROLE=PSERVER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS=2 \
        PADDLE_CURRENT_ENDPOINT=127.0.0.1:${ports[$i]} "$(listenFd "$i")"
    else
      echo PADDLE_TRAINING_ROLE=TRAINER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS=2 \
        PADDLE_TRAINER_ID=$i
    fi ;;
  paddle2)
    if [ "$role" = pserver ]; then
      echo TRAINING_ROLE=PSERVER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS_NUM=2 \
        POD_IP=127.0.0.1 PADDLE_PORT=${ports[$i]} "$(listenFd "$i")"
    else
      echo TRAINING_ROLE=TRAINER PADDLE_PSERVERS_IP_PORT_LIST=$list PADDLE_TRAINERS_NUM=2 \
        PADDLE_TRAINER_ID=$i
    fi ;;
  tf)
    local type=$role
    [ "$role" = pserver ] && type=ps
    [ "$role" = trainer ] && { [ "$i" = 0 ] && type=chief || type=worker; }
    [ "$type" != ps ] && i=0 # the chief and the one worker are each index 0 of their kind
    echo "TF_CONFIG={\"cluster\":{\"ps\":[\"127.0.0.1:$p0\",\"127.0.0.1:$p1\"],\
\"chief\":[\"127.0.0.1:1\"],\"worker\":[\"127.0.0.1:2\"]},\"task\":{\"type\":\"$type\",\"index\":$i}}"
    [ "$type" = ps ] && listenFd "$i" ;;
  pslite)
    local r=$role
    [ "$role" = pserver ] && r=server
    [ "$role" = trainer ] && r=worker
    echo DMLC_ROLE=$r DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$p0 DMLC_NUM_SERVER=2 \
      DMLC_NUM_WORKER=2
    [ "$role" = scheduler ] && listenFd 0 ;;
  mindspore)
    local r=MS_SCHED
    [ "$role" = pserver ] && r=MS_PSERVER
    [ "$role" = trainer ] && r=MS_WORKER
    echo MS_ROLE=$r MS_SCHED_HOST=127.0.0.1 MS_SCHED_PORT=$p0 MS_SERVER_NUM=2 MS_WORKER_NUM=2
    [ "$role" = scheduler ] && listenFd 0 ;;
  esac
}
declare -A pids
# startNode ROLE INDEX LOG: starts node ROLE.INDEX with this script's flags, logging to LOG.
startNode() {
  local rendezvous=""
  [ "$1.$2" = trainer.0 ] && [ -n "${RENDEZVOUS_FD:-}" ] && rendezvous="OAR_LISTEN_FD=$RENDEZVOUS_FD"
  # Word splitting of nodeEnv's output is wanted; its values hold no spaces.
  # shellcheck disable=SC2046,SC2086
  env $(nodeEnv "$1" "$2") $rendezvous timeout 120 "$bin/oar-executor" \
    --main "$model/main.pb" --startup "$model/startup.pb" "${flags[@]}" >"$3" 2>&1 &
  pids[$1.$2]=$!
}
# restartNode NODE: waits for NODE (killed) to end, prints its status and starts it again
# RESTART_AFTER seconds later, logging to NODE.restarted.log.
restartNode() {
  wait "${pids[$1]}"
  echo "$1 $?"
  sleep "$RESTART_AFTER"
  startNode "${1%.*}" "${1#*.}" "$out/$1.restarted.log"
  nodes=$(echo "$nodes" | sed "s/$1/$1.restarted/")
  pids[$1.restarted]=${pids[$1]}
}
flags=("$@")
nodes="pserver.0 pserver.1 trainer.0 trainer.1"
case "${CONVENTION:-paddle1}" in
pslite | mindspore)
  # shellcheck disable=SC2046
  # shellcheck disable=SC2086
  env $(nodeEnv scheduler 0) timeout 120 "$bin/oar-executor" ${SCHEDULER_FLAGS:-} \
    >"$out/scheduler.log" 2>&1 &
  pids[scheduler]=$!
  nodes="$nodes scheduler" ;;
esac
for role in pserver trainer; do
  for i in 0 1; do
    startNode $role $i "$out/$role.$i.log"
  done
done
if [ "$victim" != none ]; then
  if [ -n "${VICTIM_WAIT_FOR:-}" ]; then
    for _ in $(seq 1200); do
      grep -q "$VICTIM_WAIT_FOR" "$out/${VICTIM_WAIT_IN:-$victim}.log" && break
      sleep 0.05
    done
  fi
  sleep "$after"
  # `timeout` runs oar-executor as its child: kill that child, as a crash would.
  child=$(pgrep -P "${pids[$victim]}")
  if [ -n "$child" ]; then # else it has ended already
    kill -"${VICTIM_SIGNAL:-KILL}" "$child"
    for _ in $(seq 2 "${VICTIM_SIGNALS:-1}"); do # a storm: again until it ends or N were sent
      sleep 0.002
      kill -"${VICTIM_SIGNAL:-KILL}" "$child" 2>/dev/null || break
    done
    if [ -n "${VICTIM_RESUME_AFTER:-}" ]; then
      sleep "$VICTIM_RESUME_AFTER"
      kill -CONT "$child"
    fi
  fi
  if [ -n "${RESTART_AFTER:-}" ]; then # start it again, as an operator or a supervisor would
    restartNode "$victim"
    if [ -n "${SECOND_VICTIM:-}" ]; then
      sleep "${SECOND_AFTER:-0}"
      child=$(pgrep -P "${pids[$SECOND_VICTIM]}")
      if [ -n "$child" ]; then
        kill -KILL "$child"
        restartNode "$SECOND_VICTIM"
      else # started again, it would wait for trainers that are gone
        echo "$SECOND_VICTIM had ended before its kill: not started again"
      fi
    fi
  fi
fi
for node in $nodes; do
  wait "${pids[$node]}"
  echo "$node $?"
done
