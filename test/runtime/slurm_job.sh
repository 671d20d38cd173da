#!/usr/bin/env bash
# Runs a command under a real single-host Slurm that this script configures and starts (munged,
# slurmctld, slurmd; everything in a temporary directory, traffic on 127.0.0.1) and stops after.
# Usage: slurm_job.sh WORK_DIR -- srun ARGS...   (the srun line runs with SLURM_CONF set)
# Exits 77, with one line saying why, where Slurm cannot run here (not root, not installed).
set -u
work=$1
shift 2
[ "$(id -u)" -eq 0 ] || { echo "skip: a private Slurm needs root (slurmd runs jobs as any user)"; exit 77; }
for tool in munged slurmctld slurmd srun; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] ||
    { echo "skip: $tool is not installed (Debian's slurmctld, slurmd, slurm-client, munge)"; exit 77; }
done
PATH=$PATH:/usr/sbin
mkdir -p "$work/state" "$work/spool"
chmod 755 "$work"
host=$(hostname -s)
freePort() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)); }
stop() {
  for daemon in slurmd slurmctld munged; do
    [ -s "$work/$daemon.pid" ] && kill "$(cat "$work/$daemon.pid")" 2>/dev/null
  done
}
trap stop EXIT
head -c 1024 /dev/urandom >"$work/munge.key"
chmod 400 "$work/munge.key"
munged --key-file="$work/munge.key" --socket="$work/munge.sock" --pid-file="$work/munged.pid" \
  --log-file="$work/munged.log" --seed-file="$work/munge.seed" --force ||
  { echo "skip: munged did not start: $(tail -1 "$work/munged.log")"; exit 77; }
cat >"$work/slurm.conf" <<CONF
ClusterName=oartest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(freePort)
SlurmdPort=$(freePort)
AuthType=auth/munge
AuthInfo=socket=$work/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
SlurmUser=root
SlurmdUser=root
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE
CONF
export SLURM_CONF=$work/slurm.conf
slurmctld -f "$SLURM_CONF" && slurmd -f "$SLURM_CONF" ||
  { echo "skip: slurmctld or slurmd did not start (see $work/*.log)"; exit 77; }
for _ in $(seq 100); do # until the node is idle: at most 20 s
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %t 2>/dev/null | grep -q idle ||
  { echo "skip: the Slurm node did not come up (see $work/slurmd.log)"; exit 77; }
timeout 180 "$@"
