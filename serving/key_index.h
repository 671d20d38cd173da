// Finding a key's row in an exported table: its keys are sorted, and an open-addressing index
// built once at load turns a lookup into about one cache miss.
#pragma once

#include <cstdint>

#include "executor/tensor.h"
#include "support/hash.h"

namespace oar {

/// An index over `keys` (i64 [n], the uint64 keys sorted): i32 slots, a power of two at least
/// twice n, each holding a row + 1 or 0 for empty, placed by mixKey(key).
Tensor buildKeyIndex(const Tensor &keys);

/// The row of `key` among `n` sorted `keys`, or -1: through `index` (`slots` entries) when
/// given, else by binary search.
inline int64_t findKeyRow(const uint64_t *keys, int64_t n, const int32_t *index, int64_t slots,
                          uint64_t key) {
  if (index) {
    uint64_t mask = static_cast<uint64_t>(slots) - 1;
    for (uint64_t h = mixKey(key) & mask;; h = (h + 1) & mask) {
      int32_t r = index[h];
      if (r == 0)
        return -1;
      if (keys[r - 1] == key)
        return r - 1;
    }
  }
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && keys[lo] == key ? lo : -1;
}

} // namespace oar
