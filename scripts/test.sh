#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# openmpi-bin: a test runs a job under mpirun.
OAR_EXTRA_PACKAGES="openmpi-bin ${OAR_EXTRA_PACKAGES:-}" scripts/setup.sh
ctest --test-dir build --output-on-failure -j"$(nproc)" --timeout 600
