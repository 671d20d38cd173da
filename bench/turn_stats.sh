# shellcheck shell=bash
# Statistics over a bench's turns, sourced by bench/dist_mlp.sh and bench/collective_mlp.sh:
# each turn runs every setting once, one after the other, and settings compare by the median of
# their ratios turn by turn (neighbours in time compare more fairly on a shared machine).

# turnRatios MAP A B: "r0 r1 ...", MAP[A|turn] / MAP[B|turn] for each turn it holds.
turnRatios() {
  local -n map=$1
  local t out=""
  for ((t = 0; ; t++)); do
    [ -n "${map[$2|$t]+held}" ] || break
    out+="$(awk -v a="${map[$2|$t]}" -v b="${map[$3|$t]}" 'BEGIN {printf "%.3f", a / b}') "
  done
  echo "${out% }"
}

# median "x0 x1 ...": the middle value (the mean of the two middle ones for an even count).
median() {
  tr ' ' '\n' <<<"$1" | sort -g | awk '{v[NR] = $1} END {printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}

# medianInterval "x0 x1 ...": "L-U (C%)", the narrowest pair of order statistics x(k), x(n+1-k)
# that holds the true median with at least 90% confidence whatever the distribution (the sign
# test's interval: C = 1 - 2 P(Binomial(n, 1/2) < k)); "none" under 5 values. A ratio whose
# interval holds 1 differs from 1 by no more than the noise shows.
medianInterval() {
  tr ' ' '\n' <<<"$1" | sort -g | awk '{v[NR] = $1} END {
    n = NR; k = 0; below = 0; term = 0.5 ^ n # term: P(Binomial(n, 1/2) = j)
    for (j = 0; 1 - 2 * (below + term) >= 0.9 && j < n / 2; j++) { below += term; term *= (n - j) / (j + 1); k = j + 1 }
    if (k == 0) { printf "none"; exit }
    printf "%.3f-%.3f (%.0f%%)", v[k], v[n + 1 - k], 100 * (1 - 2 * below)
  }'
}
