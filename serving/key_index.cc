// Building the open-addressing index of an exported table's keys.
#include "serving/key_index.h"

namespace oar {

Tensor buildKeyIndex(const Tensor &keys) {
  int64_t n = keys.numel(), slots = 16;
  while (slots < 2 * n)
    slots *= 2;
  Tensor index(proto::I32, {slots});
  int32_t *slot = index.data<int32_t>();
  const auto *k = static_cast<const uint64_t *>(keys.raw());
  uint64_t mask = static_cast<uint64_t>(slots) - 1;
  for (int64_t r = 0; r < n; ++r) {
    uint64_t h = mixKey(k[r]) & mask;
    while (slot[h] != 0)
      h = (h + 1) & mask;
    slot[h] = static_cast<int32_t>(r + 1);
  }
  return index;
}

} // namespace oar
