#!/bin/bash
# What a pull costs by where its four threads run: the trainer's, its ZeroMQ I/O thread, the
# pserver's and the pserver's I/O thread (raw ZeroMQ: its client, echo and their I/O threads).
# Each side runs alone (`bench_runtime pull-latency`); once all threads exist, this pins each to
# a core with taskset. Usage: bench/placement.sh [BYTES] (default 65536), from a build in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
bytes=${1:-65536}
bench=build/bench_runtime
[ -x "$bench" ] || { echo "placement.sh: $bench is missing; build first" >&2; exit 1; }

# The threads of process $1 named $2, oldest first.
threads() {
  for t in /proc/"$1"/task/*; do
    [ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && basename "$t"
  done | sort -n
}

# Runs one side ($1: oar or raw) pinned as $2 ("free", or four cores: trainer, its I/O thread,
# pserver, its I/O thread) and prints its microseconds per pull.
run() {
  local side=$1 cores=$2 out
  out=$(mktemp)
  "$bench" pull-latency "$bytes" "$side" 100 >"$out" 2>/dev/null &
  local trainer=$!
  if [ "$cores" != free ]; then
    local server="" tio="" sio="" sapp="" _
    # The trainer's process makes the Communicator's I/O thread before the raw client's; the
    # pserver's process starts the raw echo (its I/O thread, then its thread) before the pserver.
    for _ in $(seq 100); do
      server=$(cat /proc/"$trainer"/task/*/children 2>/dev/null | tr ' ' '\n' | grep . | head -1 || true)
      if [ -n "$server" ] && [ "$(threads "$trainer" ZMQbg/IO/0 | wc -l)" = 2 ] &&
        [ "$(threads "$server" ZMQbg/IO/0 | wc -l)" = 2 ]; then
        break
      fi
      sleep 0.05
    done
    if [ "$side" = oar ]; then
      tio=$(threads "$trainer" ZMQbg/IO/0 | head -1)
      sio=$(threads "$server" ZMQbg/IO/0 | tail -1)
      sapp=$server
    else
      tio=$(threads "$trainer" ZMQbg/IO/0 | tail -1)
      sio=$(threads "$server" ZMQbg/IO/0 | head -1)
      sapp=$(threads "$server" bench_runtime | grep -vx "$server" | head -1)
    fi
    read -r c1 c2 c3 c4 <<<"$cores"
    taskset -p -c "$c1" "$trainer" >/dev/null
    taskset -p -c "$c2" "$tio" >/dev/null
    taskset -p -c "$c3" "$sapp" >/dev/null
    taskset -p -c "$c4" "$sio" >/dev/null
  fi
  wait "$trainer"
  awk '{print $(NF-1)}' "$out"
  rm -f "$out"
}

echo "pull of $bytes bytes between two processes, microseconds (best of 100 turns)"
printf '%-40s %8s %8s %9s\n' placement oar raw oar/raw
while IFS='|' read -r name cores; do
  if [ "$cores" != free ] && [ "$(nproc)" -lt 2 ]; then continue; fi
  oar=$(run oar "$cores")
  raw=$(run raw "$cores")
  awk -v n="$name" -v o="$oar" -v r="$raw" 'BEGIN { printf "%-40s %8s %8s %9.2f\n", n, o, r, o / r }'
done <<'EOF'
as the kernel places them|free
each process on a core of its own|0 0 1 1
all four on one core|0 0 0 0
each thread beside the other process's|0 1 1 0
EOF
