#!/usr/bin/env bash
# Installs oar from BUILD_DIR into a scratch prefix, then builds and runs an outside project that
# finds it with find_package(oar).
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2")
work=$build/test-scratch/install
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src/test/install/consumer" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/consumer/consumer"
