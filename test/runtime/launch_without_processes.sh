#!/usr/bin/env bash
# Runs oar-launch as user nobody with at most LIMIT processes and threads for that user, beside
# a sentinel process of nobody's that is not part of the job. Run in a PID namespace of its own
# (unshare --pid), so a signal to every process (kill(-1, ...)) reaches nothing outside it.
# Usage: launch_without_processes.sh LIMIT OAR-LAUNCH MODEL-DIR
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody sleep 60 &
sentinel=$!
sleep 0.3 # the sentinel is nobody's before the launch counts processes
as_nobody bash -c "ulimit -u $1; exec $2 --server-num=2 --worker-num=2 --curve=false --timeout=60 $3" 2>&1
echo "launch exit status $?"
kill -0 "$sentinel" 2>/dev/null && echo "sentinel alive"
kill "$sentinel" 2>/dev/null
exit 0
