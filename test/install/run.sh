#!/usr/bin/env bash
# Installs oar from BUILD_DIR into a scratch prefix and checks what a newcomer does with it:
#   1. an outside project declared project(X CXX) builds with find_package(oar) and runs;
#   2. the installed tools run without LD_LIBRARY_PATH: oar-model writes a model of
#      data/uci_housing and oar-executor trains it;
#   3. the trained model goes out: the installed oar-export and oar-predict serve it, and a
#      program of the user's own scores a row with oar::Predictor, as oar-predict does;
#   4. the README's example program (the ```cpp block between the readme-example markers)
#      builds against the prefix, writes a model, and the installed oar-executor trains it.
# Every installed binary runs with LD_LIBRARY_PATH unset: RPATHs alone must find liboar.
# Usage: run.sh BUILD_DIR SOURCE_DIR [GENERATOR [MAKE_PROGRAM]]  (CTest passes the main build's).
# OAR_README_EXAMPLE_OPTIONAL=1 skips step 4 while README.md has no markers.
set -euo pipefail
build=$(realpath "$1") src=$(realpath "$2") generator=${3:-Ninja} makeProgram=${4:-}
work=$build/test-scratch/install
prefix=$work/prefix
rm -rf "$work" && mkdir -p "$work"

say() { echo "install test: $*"; }
fail() {
  echo "install test: error: $*" >&2
  exit 1
}
# Runs a command with LD_LIBRARY_PATH unset.
bare() { env -u LD_LIBRARY_PATH "$@"; }
# Fails unless BINARY loads liboar from the prefix (not from a build tree or another install).
requireOwnLiboar() {
  local lib
  lib=$(bare ldd "$1" | awk '$1 ~ /^liboar\.so/ { print $3 }')
  [[ $lib == "$prefix"/* ]] ||
    fail "$1 loads liboar from '${lib:-nowhere}', not from $prefix; check its RPATH (readelf -d)"
}
# Configures and builds the CMake project in $1 into $2 against the prefix.
buildAgainstPrefix() {
  local args=(-S "$1" -B "$2" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix")
  [[ -n $makeProgram ]] && args+=(-DCMAKE_MAKE_PROGRAM="$makeProgram")
  cmake "${args[@]}" >"$2.configure.log" 2>&1 ||
    fail "configuring $1 failed; see $2.configure.log:$(echo; tail -n 20 "$2.configure.log")"
  cmake --build "$2" >"$2.build.log" 2>&1 ||
    fail "building $1 failed; see $2.build.log:$(echo; tail -n 20 "$2.build.log")"
}

cmake --install "$build" --prefix "$prefix" >/dev/null

say "installed headers: every header one includes is installed, and none is ZeroMQ's"
inc=$prefix/include/oar
while IFS= read -r header; do
  while IFS= read -r included; do
    case $included in
    llvm/* | google/*) ;; # LLVM's and protobuf's, found through the package's dependencies
    *) [[ -f $inc/$included ]] ||
      fail "${header#"$inc"/} includes \"$included\", which is not installed (OAR_PUBLIC_HEADERS in CMakeLists.txt)" ;;
    esac
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$header")
  ! grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]zmq' "$header" ||
    fail "${header#"$inc"/} includes a ZeroMQ header; ZeroMQ is private to liboar"
done < <(find "$inc" -name '*.h')
! grep -q cppzmq "$prefix"/lib*/cmake/oar/*.cmake ||
  fail "the installed CMake package still names cppzmq; a consumer would need ZeroMQ's headers"

# --- 1. a CXX-only consumer project ---
say "consumer project (find_package(oar), generator $generator)"
mkdir -p "$work/consumer"
buildAgainstPrefix "$src/test/install/consumer" "$work/consumer/build"
requireOwnLiboar "$work/consumer/build/consumer"
bare "$work/consumer/build/consumer"

# --- 2. the installed tools, without LD_LIBRARY_PATH ---
say "installed oar-model and oar-executor train uci_housing"
for tool in "$prefix"/bin/oar-*; do
  requireOwnLiboar "$tool"
done
bare "$prefix/bin/oar-model" --model=linear --in=13 --out=1 --lr=0.01 --batch-size=20 --epochs=2 \
  --format=uci_housing --data="$src/data/uci_housing/housing.data" -o "$work/tool_model" \
  >"$work/tool_model.log" 2>&1 ||
  fail "the installed oar-model failed:$(echo; tail -n 20 "$work/tool_model.log")"
bare "$prefix/bin/oar-executor" --main "$work/tool_model/main.pb" \
  --startup "$work/tool_model/startup.pb" >>"$work/tool_model.log" 2>&1 ||
  fail "oar-executor failed on the oar-model program:$(echo; tail -n 20 "$work/tool_model.log")"
grep -q "test: 102 rows" "$work/tool_model.log" ||
  fail "oar-executor did not evaluate the 102 uci_housing test rows; see $work/tool_model.log"

# --- 3. the trained model out: oar-export, oar-predict and oar::Predictor ---
say "installed oar-export, oar-predict and a program of oar::Predictor serve the model"
bare "$prefix/bin/oar-executor" --main "$work/tool_model/main.pb" \
  --startup "$work/tool_model/startup.pb" --save "$work/tool_save" >>"$work/tool_model.log" 2>&1 &&
  bare "$prefix/bin/oar-export" "$work/tool_model" --load "$work/tool_save" -o "$work/served" \
    >>"$work/tool_model.log" 2>&1 ||
  fail "training and exporting the oar-model program failed:$(echo; tail -n 20 "$work/tool_model.log")"
# uci_housing's feed scores the test split (the last 102 rows), normalised over the file.
bare "$prefix/bin/oar-predict" "$work/served" --data "$src/data/uci_housing/housing.data" \
  -o "$work/served.tsv" >>"$work/tool_model.log" 2>&1 ||
  fail "the installed oar-predict failed:$(echo; tail -n 20 "$work/tool_model.log")"
[[ $(wc -l <"$work/served.tsv") == 102 ]] || fail "oar-predict wrote $(wc -l <"$work/served.tsv") lines for 102 test rows"
mkdir -p "$work/predictor"
buildAgainstPrefix "$src/test/install/predictor" "$work/predictor/build"
requireOwnLiboar "$work/predictor/build/predictor_consumer"
# A row at every feature's mean (0 after normalising) scores the model's bias and nothing else.
score=$(bare "$work/predictor/build/predictor_consumer" "$work/served" 0 0 0 0 0 0 0 0 0 0 0 0 0) ||
  fail "the oar::Predictor program failed on the export"
bias=$(od -A n -t f4 -j 128 "$work/served/params/fc_0.b_0.npy" | tr -d ' ') # past the .npy header
awk -v s="$score" -v b="$bias" 'BEGIN {d = s - b; exit !(d * d <= 1e-12 * (b * b + 1e-6))}' ||
  fail "oar::Predictor scored $score for a row of zeros; the model's bias is $bias"

# --- 4. the README's example program ---
begin='<!-- readme-example: begin -->' end='<!-- readme-example: end -->'
if ! grep -qF "$begin" "$src/README.md" || ! grep -qF "$end" "$src/README.md"; then
  if [[ ${OAR_README_EXAMPLE_OPTIONAL:-} == 1 ]]; then
    say "README.md has no readme-example markers; step 3 skipped (OAR_README_EXAMPLE_OPTIONAL=1)"
    exit 0
  fi
  fail "README.md lacks the lines '$begin' and '$end' around the example program"
fi
say "README example program"
example=$work/readme_example
mkdir -p "$example"
# The first ```cpp fence after the begin marker, up to its closing fence, before the end marker.
awk -v begin="$begin" -v end="$end" '
  index($0, begin) { inside = 1; next }
  index($0, end) { exit }
  inside && !code && /^[[:space:]]*```cpp[[:space:]]*$/ { code = 1; next }
  code && /^[[:space:]]*```/ { exit }
  code { print }
' "$src/README.md" >"$example/main.cc"
[[ -s $example/main.cc ]] || fail "README.md has no \`\`\`cpp block between '$begin' and '$end'"
cat >"$example/CMakeLists.txt" <<'EOF'
# The README's example program, as a reader would build it against an installed oar.
cmake_minimum_required(VERSION 3.20)
project(readme_example CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(oar REQUIRED)
add_executable(readme_example main.cc)
target_link_libraries(readme_example PRIVATE oar::oar)
EOF
buildAgainstPrefix "$example" "$example/build"
requireOwnLiboar "$example/build/readme_example"
(cd "$src" && bare "$example/build/readme_example" "$work/readme_model") ||
  fail "the README example program failed (run from $src with output directory $work/readme_model)"
# The program names its data relative to the repository root, so it trains from there too.
(cd "$src" && bare "$prefix/bin/oar-executor" --main "$work/readme_model/main.pb" \
  --startup "$work/readme_model/startup.pb" --epochs 1) >"$work/readme_model.log" 2>&1 ||
  fail "oar-executor failed on the README example's model:$(echo; tail -n 20 "$work/readme_model.log")"
say "all steps passed"
