#!/usr/bin/env bash
# Builds oar and runs the benchmarks, with PyTorch set up fairly: OpenBLAS (pthreads) instead of
# the reference BLAS, the right core type for AVX-512 CPUs, and equal thread counts.
set -euo pipefail
cd "$(dirname "$0")/.."
OAR_EXTRA_PACKAGES="python3-torch python3-numpy libopenblas0-pthread" scripts/setup.sh
export LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# OpenBLAS's Skylake-X kernels where the CPU has AVX-512; elsewhere they stop on an illegal
# instruction, and OpenBLAS's own choice is the right one.
if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SKYLAKEX; fi
for t in 1 "$(nproc)"; do
  OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t build/bench_train_step --num-threads "$t" "$@"
done
