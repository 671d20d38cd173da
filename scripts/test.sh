#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# For the cluster tests: mpirun (openmpi-bin), and a private single-host Slurm that a test
# configures, starts and stops itself (slurmctld, slurmd, slurm-client, munge).
OAR_EXTRA_PACKAGES="openmpi-bin slurmctld slurmd slurm-client munge ${OAR_EXTRA_PACKAGES:-}" \
  scripts/setup.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
