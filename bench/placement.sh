#!/bin/bash
# What a pull costs by where its threads run: the trainer's, its ZeroMQ I/O thread (none over a
# direct link), the pserver's and the pserver's I/O thread (raw ZeroMQ: its client, echo and
# their I/O threads).
# Each side runs alone (`bench_runtime pull-latency`); once every thread exists the bench waits,
# this script pins each thread to a core with taskset, and only then the timed turns start.
# Usage: bench/placement.sh [BYTES] (default 65536), from a build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${1:-65536}
bench=build/bench_runtime
[ -x "$bench" ] || { echo "placement.sh: $bench is missing; build first" >&2; exit 1; }

# The first two cores this script may run on (taskset prints e.g. "0-3,6").
read -r a b < <(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' |
  awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); ++c) printf "%s ", c } END { print "" }')

# The threads of process $1 named $2, oldest first.
threads() {
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && basename "$t"
  done | sort -n
}

# Runs one side ($1: oar or raw) pinned as $2 ("free", or four cores: trainer, its I/O thread,
# pserver, its I/O thread) and prints its microseconds per pull. Runs in a subshell of its own.
run() {
  local side=$1 cores=$2 line
  log=$(mktemp) # not local: the trap below runs after the function returned
  coproc BENCH { exec "$bench" pull-latency "$bytes" "$side" 100 --go-on-stdin 2>"$log"; }
  trainer=$BENCH_PID
  trap 'kill "$trainer" 2>/dev/null; rm -f "$log"' EXIT
  fail() {
    echo "placement.sh: $side, cores $cores: $1" >&2
    cat "$log" >&2
    exit 1
  }
  if ! read -r -t 120 line <&"${BENCH[0]}" || [ "$line" != ready ]; then
    fail "the bench did not start"
  fi
  if [ "$cores" != free ]; then
    local server tio sio sapp c1 c2 c3 c4
    server=$(cat /proc/"$trainer"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | head -1) ||
      fail "no pserver process"
    # The trainer's process makes the Communicator's I/O thread before the raw client's, or none
    # over a direct link (docs/runtime.md; OAR_DIRECT_LINKS=0 brings it back); the pserver's
    # process starts the raw echo (its I/O thread, then its thread) before the pserver.
    local trainerIo
    trainerIo=$(threads "$trainer" ZMQbg/IO/0 | wc -l)
    if { [ "$trainerIo" != 1 ] && [ "$trainerIo" != 2 ]; } ||
      [ "$(threads "$server" ZMQbg/IO/0 | wc -l)" != 2 ]; then
      fail "expected one or two ZeroMQ I/O threads in the trainer's process, two in the pserver's"
    fi
    if [ "$side" = oar ]; then
      tio=""
      [ "$trainerIo" = 2 ] && tio=$(threads "$trainer" ZMQbg/IO/0 | head -1)
      sio=$(threads "$server" ZMQbg/IO/0 | tail -1)
      sapp=$server
    else
      tio=$(threads "$trainer" ZMQbg/IO/0 | tail -1)
      sio=$(threads "$server" ZMQbg/IO/0 | head -1)
      sapp=$(threads "$server" bench_runtime | grep -vx "$server" | head -1)
    fi
    read -r c1 c2 c3 c4 <<<"$cores"
    for pin in "$c1 $trainer" "$c2 ${tio:-none}" "$c3 $sapp" "$c4 $sio"; do
      read -r core tid <<<"$pin"
      [ "$tid" = none ] && continue # a direct link: the trainer has no I/O thread to place
      if [ -z "$tid" ] || ! taskset -p -c "$core" "$tid" >/dev/null; then
        fail "cannot pin thread '$tid'"
      fi
    done
  fi
  echo go >&"${BENCH[1]}"
  read -r -t 600 line <&"${BENCH[0]}" || fail "no result"
  wait "$trainer" || fail "the bench failed"
  echo "$line" | awk '{ print $(NF - 1) }'
}

echo "pull of $bytes bytes between two processes, microseconds (best of 100 turns)"
printf '%-40s %8s %8s %9s\n' placement oar raw oar/raw
while IFS='|' read -r name cores; do
  [ "$cores" != free ] && [ -z "$b" ] && continue # one core only: nothing to place
  oar=$(run oar "$cores") || exit 1
  raw=$(run raw "$cores") || exit 1
  awk -v n="$name" -v o="$oar" -v r="$raw" 'BEGIN { printf "%-40s %8s %8s %9.2f\n", n, o, r, o / r }'
done <<EOF
as the kernel places them|free
each process on a core of its own|$a $a $b $b
all four on one core|$a $a $a $a
each thread beside the other process's|$a $b $b $a
EOF
