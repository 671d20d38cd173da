#!/usr/bin/env bash
# Installs the Debian 12 packages oar needs (only those missing), then builds into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ llvm-14-dev libprotobuf-dev protobuf-compiler libzmq3-dev
          cppzmq-dev libgloo-dev libdnnl-dev ocl-icd-opencl-dev catch2 zlib1g-dev dataset-fashion-mnist iproute2
          python3-dev python3-numpy python3-pytest pybind11-dev ${OAR_EXTRA_PACKAGES:-})
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=${OAR_BUILD_TYPE:-Release} >/dev/null
cmake --build build -j"$(nproc)"
