// CPU kernel of lookup_sorted_table.
#include <cstring>

#include "checkpoint/row_init.h"
#include "kernels/cpu/cpu_util.h"
#include "serving/key_index.h"

namespace oar::cpu {

/// A row of a few floats: memcpy's call and size dispatch took as long as a row's cache miss
/// (8% of wide & deep's predictions, 6,656 rows of 10 floats a batch); fixed 16-byte copies
/// compile to single moves.
static inline void copyRow(const float *from, int64_t width, float *to) {
  int64_t j = 0;
  for (; j + 4 <= width; j += 4)
    std::memcpy(to + j, from + j, 4 * sizeof(float));
  for (; j < width; ++j)
    to[j] = from[j];
}

static llvm::Error lookupSortedTable(KernelContext &ctx) {
  const Tensor &ids = ctx.input("Ids"), &keys = ctx.input("Keys"), &values = ctx.input("Values");
  int64_t n = keys.numel(), width = values.dim(1);
  const auto *k = static_cast<const uint64_t *>(keys.raw());
  // Keys 0..n-1 (a table one machine trained dense) need no search: a key is its row.
  bool direct = n > 0 && k[0] == 0 && k[n - 1] == static_cast<uint64_t>(n - 1);
  const int32_t *index = nullptr;
  int64_t slots = 0;
  if (ctx.hasInput("Index") && ctx.input("Index").numel() > 0 && !direct) {
    const Tensor &t = ctx.input("Index");
    slots = t.numel();
    if (t.dtype() != proto::I32 || (slots & (slots - 1)) != 0 || slots < n)
      return makeError("{0}: must be an i32 index of a power-of-two size above the {1} keys",
                       ctx.describeInput("Index"), n);
    index = t.data<int32_t>();
  }
  const ops::AttrReader &a = ctx.attrs();
  RowInit init{a.getString("init"), a.getFloat("init_a"), a.getFloat("init_b"), a.getInt("seed"),
               a.getString("table")};
  uint64_t stream = init.streamSeed();
  int64_t pad = a.getInt("padding_idx"), count = ids.numel();
  const int64_t *id = ids.data<int64_t>();
  const float *rows = values.data<float>();
  float *out = ctx.output("Out").data<float>();
  constexpr int64_t kAhead = 24; // a large table's rows miss the cache: overlap the misses
  uint64_t mask = static_cast<uint64_t>(slots) - 1;
  for (int64_t i = 0; i < count; ++i) {
    if (i + kAhead < count) {
      auto ahead = static_cast<uint64_t>(id[i + kAhead]);
      if (direct && ahead < static_cast<uint64_t>(n) && width > 0) {
        __builtin_prefetch(rows + ahead * width);
        __builtin_prefetch(rows + ahead * width + width - 1); // a row may cross a line
      } else if (index)
        __builtin_prefetch(index + (mixKey(ahead) & mask));
    }
    float *dst = out + i * width;
    if (id[i] == pad) {
      std::fill_n(dst, width, 0.0f);
      continue;
    }
    auto key = static_cast<uint64_t>(id[i]);
    int64_t row = direct ? (key < static_cast<uint64_t>(n) ? static_cast<int64_t>(key) : -1)
                         : findKeyRow(k, n, index, slots, key);
    if (row < 0)
      init.weightsFrom(stream, key, width, dst);
    else
      copyRow(rows + row * width, width, dst);
  }
  return llvm::Error::success();
}
OAR_KERNEL(lookup_sorted_table, Device::Cpu, proto::I64, lookupSortedTable);

} // namespace oar::cpu
