#!/usr/bin/env bash
# All-reduce among 2 and 4 processes of this host, float32 sum of 64 KiB, 1, 16 and 64 MiB:
# oar's CollectiveGroup (Gloo's ring over TCP, bench_allreduce) against torch.distributed's gloo
# backend (bench/torch_allreduce.py: Debian's python3-torch, 1 thread a process), and against a
# raw TCP ring between oar's processes (the link's limit). algbw and busbw as nccl-tests define
# them (busbw = algbw x 2(N-1)/N: what each link carries). oar runs twice: one TCP connection
# per pair of ranks, and STREAMS of them (OAR_BENCH_STREAMS, default 4: each all-reduce of 4 MiB
# or more split among them, CollectiveOptions::streams). Usage: bench/allreduce.sh [RANKS...]
# (after scripts/setup.sh; torch's column is left out without python3-torch).
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
  oar=$(OAR_BENCH_STREAMS=1 $b/bench_allreduce "$ranks" "${sizes[@]}")
  echo "$oar" | head -1
  declare -A manyBus=()
  while read -r bytes _ bus _; do manyBus[$bytes]=$bus; done <<<"$(OAR_BENCH_STREAMS=$streams $b/bench_allreduce "$ranks" "${sizes[@]}" | tail -n +3)"
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
  printf '%10s %10s %10s %16s %12s %10s %14s %20s\n' bytes "oar algbw" "oar busbw" \
    "oar busbw x$streams" "torch busbw" "raw TCP" "oar / torch" "oar x$streams / torch"
  echo "$oar" | tail -n +3 | while read -r bytes alg bus raw; do
    t=${torchBus[$bytes]:-} m=${manyBus[$bytes]:-}
    ratio=- manyRatio=-
    [ -n "$t" ] && ratio=$(awk -v a="$bus" -v b="$t" 'BEGIN {printf "%.2f", a / b}')
    [ -n "$t" ] && [ -n "$m" ] && manyRatio=$(awk -v a="$m" -v b="$t" 'BEGIN {printf "%.2f", a / b}')
    printf '%10s %10s %10s %16s %12s %10s %14s %20s\n' "$bytes" "$alg" "$bus" "${m:--}" "${t:--}" "$raw" "$ratio" "$manyRatio"
  done
  echo
done
echo "(GB/s; a ratio above 1: oar moves more per second than torch; the raw TCP ring is the limit)"
