#!/usr/bin/env bash
# All-reduce among 2 and 4 processes of this host, float32 sum of 64 KiB, 1, 16 and 64 MiB:
# oar's CollectiveGroup (bench_allreduce) against torch.distributed's gloo backend
# (bench/torch_allreduce.py: Debian's python3-torch, 1 thread a process), and against a raw TCP
# ring between oar's processes (what a TCP ring can carry). algbw and busbw as nccl-tests define
# them (busbw = algbw x 2(N-1)/N: what each link carries). oar runs three ways: through its
# shared memory segment (what ranks of one host use), and on Gloo's TCP ring with one
# connection per pair of ranks and with STREAMS of them (OAR_BENCH_STREAMS, default 4: each
# all-reduce of 4 MiB or more split among them, CollectiveOptions::streams), as ranks on
# several hosts do. Usage: bench/allreduce.sh [RANKS...] (after scripts/setup.sh; torch's
# column is left out without python3-torch).
set -euo pipefail
cd "$(dirname "$0")/.."
b=build
sizes=(${OAR_BENCH_SIZES:-65536 1048576 16777216 67108864})
streams=${OAR_BENCH_STREAMS:-4}
py=/usr/bin/python3 # Debian's python3-torch belongs to Debian's python3
[ -x $py ] || py=python3
haveTorch=0
$py -c 'import torch.distributed' 2>/dev/null && haveTorch=1
coretype=
grep -qw avx512f /proc/cpuinfo && coretype=SKYLAKEX
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%F)"
rankCounts=("$@")
[ ${#rankCounts[@]} -gt 0 ] || rankCounts=(2 4)
for ranks in "${rankCounts[@]}"; do
  # busbw by size: shared memory, TCP with 1 connection a pair, TCP with $streams.
  declare -A shmAlg=() shmBus=() tcpBus=() manyBus=() raw=()
  while read -r bytes alg bus rawBus; do shmAlg[$bytes]=$alg shmBus[$bytes]=$bus raw[$bytes]=$rawBus; done \
    <<<"$($b/bench_allreduce "$ranks" "${sizes[@]}" | tail -n +3)"
  while read -r bytes _ bus _; do tcpBus[$bytes]=$bus; done \
    <<<"$(OAR_BENCH_SHARED_MEMORY=0 OAR_BENCH_STREAMS=1 $b/bench_allreduce "$ranks" "${sizes[@]}" | tail -n +3)"
  while read -r bytes _ bus _; do manyBus[$bytes]=$bus; done \
    <<<"$(OAR_BENCH_SHARED_MEMORY=0 OAR_BENCH_STREAMS=$streams $b/bench_allreduce "$ranks" "${sizes[@]}" | tail -n +3)"
  declare -A torchBus=()
  if [ $haveTorch = 1 ]; then
    port=$($py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    pids=()
    for ((r = 1; r < ranks; r++)); do
      env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread ${coretype:+OPENBLAS_CORETYPE=$coretype} \
        OMP_NUM_THREADS=1 $py bench/torch_allreduce.py $r "$ranks" "$port" "${sizes[@]}" >/dev/null &
      pids+=($!)
    done
    torch=$(env LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread ${coretype:+OPENBLAS_CORETYPE=$coretype} \
      OMP_NUM_THREADS=1 $py bench/torch_allreduce.py 0 "$ranks" "$port" "${sizes[@]}")
    wait "${pids[@]}"
    while read -r bytes _ bus; do torchBus[$bytes]=$bus; done <<<"$torch"
  fi
  echo "$ranks ranks (processes), float32 sum, GB/s (median of each size's runs), busbw unless said; ratios: above 1, oar moves more per second than torch"
  printf '%10s %14s %12s %10s %12s %12s %10s %12s %12s %14s\n' bytes "oar shm algbw" "oar shm" "oar TCP" "oar TCP x$streams" \
    "torch gloo" "raw TCP" "shm / torch" "TCP / torch" "TCP x$streams / torch"
  for bytes in "${sizes[@]}"; do
    t=${torchBus[$bytes]:-}
    ratio() { [ -n "$t" ] && [ -n "$1" ] && awk -v a="$1" -v b="$t" 'BEGIN {printf "%.2f", a / b}' || echo -; }
    printf '%10s %14s %12s %10s %12s %12s %10s %12s %12s %14s\n' "$bytes" "${shmAlg[$bytes]:--}" "${shmBus[$bytes]:--}" \
      "${tcpBus[$bytes]:--}" "${manyBus[$bytes]:--}" "${t:--}" "${raw[$bytes]:--}" \
      "$(ratio "${shmBus[$bytes]:-}")" "$(ratio "${tcpBus[$bytes]:-}")" "$(ratio "${manyBus[$bytes]:-}")"
  done
  echo
done
echo "(the raw TCP ring is what one TCP connection a pair can carry; shared memory crosses no socket)"
