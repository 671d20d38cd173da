#!/usr/bin/env bash
# The feeds' parse speed on the same rows: oar-gen-ctr's click log in Criteo's layout, and the
# same lines as csv and tsv (a header naming label, I1..I13, C1..C26) and slot files
# (`label:1 I1:5 ... C26:3a1f`), each read through its feed by one trainer (build/bench_feeds).
# Prints rows/s and each reader's rows/s over the criteo reader's (above 1: faster than criteo),
# then the peak resident memory of a csv read of the file and of one 9 times as large (2 GB): a
# streamed feed's memory does not grow with the file.
# Usage: bench/feeds.sh [LINES]   (after scripts/setup.sh; default 1,000,000 lines)
set -euo pipefail
lines=${1:-1000000}
cd "$(dirname "$0")/.."
b=build
work=$(mktemp -d /tmp/oar-feeds.XXXXXX)
trap 'rm -rf "$work"' EXIT
$b/oar-gen-ctr --train-lines="$lines" --test-lines=1 -o "$work" >/dev/null
header=$(printf 'label'; for i in $(seq 13); do printf ',I%d' "$i"; done
         for i in $(seq 26); do printf ',C%d' "$i"; done)
{ echo "$header"; tr '\t' ',' <"$work/train.txt"; } >"$work/train.csv"
{ echo "$header" | tr ',' '\t'; cat "$work/train.txt"; } >"$work/train.tsv"
awk -F'\t' '{ line = "label:" $1
              for (i = 2; i <= 14; i++) if ($i != "") line = line " I" (i - 1) ":" $i
              for (i = 15; i <= 40; i++) if ($i != "") line = line " C" (i - 14) ":" $i
              print line }' "$work/train.txt" >"$work/train.slot"
echo "# $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(date -u +%F); $lines lines"
# Twice each, alternating, the faster of the two counting (the machine is shared and noisy).
for turn in 1 2; do
  for f in criteo:txt csv:csv tsv:tsv slot:slot; do
    $b/bench_feeds "${f%%:*}" "$work/train.${f#*:}"
  done
done | tee "$work/out.txt"
awk '{ r[$1] = ($7 > r[$1] ? $7 : r[$1]) }
     END { for (f in r) if (f != "criteo")
             printf "%-6s reads %.2f times the rows/s of the criteo reader\n", f, r[f] / r["criteo"] }' \
  "$work/out.txt" | sort
# 9 copies: over 2 GB at the default 1,000,000 lines.
{ cat "$work/train.csv"; for copy in $(seq 8); do tail -n +2 "$work/train.csv"; done; } >"$work/long.csv"
echo "the same csv, 9 times as long ($(du -m "$work/long.csv" | cut -f1) MB):"
$b/bench_feeds csv "$work/long.csv"
