#!/usr/bin/env bash
# Runs a command, kills it and everything it started with SIGKILL (a machine that lost power)
# once its output shows TEXT, then runs the same command again to the end.
# Usage: kill_and_rerun.sh OUT TEXT COMMAND...
#   OUT.1 and OUT.2 get the two runs' output. Prints "first run: status S" (137 when it was
#   killed; anything else means it ended before TEXT showed) and "second run: status S".
#   Waits at most 120 s for TEXT.
set -u
out=$1 text=$2
shift 2
# Its own process group (setsid), so the kill reaches every process it started.
setsid "$@" >"$out.1" 2>&1 &
pid=$!
for _ in $(seq 2400); do
  grep -qF -- "$text" "$out.1" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -KILL -- "-$pid" 2>/dev/null
wait "$pid"
status=$?
# The killed nodes may take a moment to go (a sanitizer build unmaps a lot), and the second run
# must not meet their locks: wait, at most 10 s, until none of the group is left.
for _ in $(seq 200); do
  kill -0 -- "-$pid" 2>/dev/null || break
  sleep 0.05
done
echo "first run: status $status"
"$@" >"$out.2" 2>&1
echo "second run: status $?"
