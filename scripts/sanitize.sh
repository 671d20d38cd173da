#!/usr/bin/env bash
# The sanitizer build and the fuzz targets. Builds oar with clang's AddressSanitizer and
# UndefinedBehaviorSanitizer (plus libFuzzer's coverage) into build-san/, runs the unit tests
# there, then each libFuzzer target of fuzz/ for a bounded time on its checked-in corpus, printing
# how many inputs it ran. A sanitizer report, a failing test or a fuzz crash fails the script; a
# crashing input is kept under build-san/fuzz-crashes/ (add it to fuzz/corpus/<target>/ once fixed).
# Usage: scripts/sanitize.sh [SECONDS_PER_TARGET]   (default 20; installs clang if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-20}
OAR_EXTRA_PACKAGES="clang-14 libclang-rt-14-dev libomp-14-dev" scripts/setup.sh >/dev/null

flags="-O1 -gline-tables-only -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined"
flags+=" -fsanitize=fuzzer-no-link -Wno-unknown-warning-option -Wno-mismatched-tags"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# No Python package: an ASan-built module cannot load into an uninstrumented python3.
cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOAR_FUZZ=ON -DOAR_CUDA=OFF -DOAR_PYTHON=OFF \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
cmake --build build-san -j"$(nproc)"

# Leaks are not checked: protobuf, LLVM and oneDNN keep process-lifetime allocations on purpose.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The install test builds a plain g++ consumer, which cannot link the instrumented library.
ctest --test-dir build-san --output-on-failure -j"$(nproc)" --timeout 900 -E '^install\.'


mkdir -p build-san/fuzz-crashes
for target in npy message program data zmtp schema scheduler; do
  work=build-san/fuzz-corpus/$target # what the run adds; the checked-in seeds stay as they are
  mkdir -p "$work"
  echo "fuzz_$target: $secs s on fuzz/corpus/$target"
  build-san/fuzz_$target -max_total_time="$secs" -print_final_stats=1 -rss_limit_mb=4096 \
    -artifact_prefix=build-san/fuzz-crashes/$target- "$work" fuzz/corpus/$target \
    >build-san/fuzz_$target.log 2>&1 || { tail -40 build-san/fuzz_$target.log; exit 1; }
  grep -E 'stat::number_of_executed_units|stat::new_units_added' build-san/fuzz_$target.log |
    sed "s/^/  /"
done
