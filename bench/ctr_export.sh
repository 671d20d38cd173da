# Sourced by the predictor benches: ctrExport WORK LINES writes oar-gen-ctr click logs
# (WORK/data: LINES training lines, 20000 test lines), trains wide & deep with the CTR defaults
# on them and exports it to WORK/export; WORK/rows is made for bench_predict --dump. Needs $b
# (the build directory).
ctrExport() {
  local work=$1 lines=$2
  $b/oar-gen-ctr --train-lines="$lines" --test-lines=20000 -o "$work/data" >/dev/null
  $b/oar-model --model=wide_deep --format=criteo --data="$work/data/train.txt" \
    --test-data="$work/data/test.txt" -o "$work/model" >/dev/null
  $b/oar-executor --main "$work/model/main.pb" --startup "$work/model/startup.pb" \
    --save "$work/save" >/dev/null
  $b/oar-export "$work/model" --load "$work/save" -o "$work/export" >/dev/null
  mkdir -p "$work/rows"
}
