// CPU kernel of lookup_sorted_table.
#include <cstring>

#include "checkpoint/row_init.h"
#include "kernels/cpu/cpu_util.h"
#include "serving/key_index.h"

namespace oar::cpu {

static llvm::Error lookupSortedTable(KernelContext &ctx) {
  const Tensor &ids = ctx.input("Ids"), &keys = ctx.input("Keys"), &values = ctx.input("Values");
  const int32_t *index = nullptr;
  int64_t slots = 0;
  if (ctx.hasInput("Index")) {
    const Tensor &t = ctx.input("Index");
    slots = t.numel();
    if (t.dtype() != proto::I32 || slots < 1 || (slots & (slots - 1)) != 0 ||
        slots < keys.numel())
      return makeError("{0}: must be an i32 index of a power-of-two size above the {1} keys",
                       ctx.describeInput("Index"), keys.numel());
    index = t.data<int32_t>();
  }
  const ops::AttrReader &a = ctx.attrs();
  RowInit init{a.getString("init"), a.getFloat("init_a"), a.getFloat("init_b"), a.getInt("seed"),
               a.getString("table")};
  uint64_t stream = init.streamSeed();
  int64_t n = keys.numel(), width = values.dim(1), pad = a.getInt("padding_idx");
  const auto *k = static_cast<const uint64_t *>(keys.raw());
  const int64_t *id = ids.data<int64_t>();
  float *out = ctx.output("Out").data<float>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    float *dst = out + i * width;
    if (id[i] == pad) {
      std::fill_n(dst, width, 0.0f);
      continue;
    }
    uint64_t key = static_cast<uint64_t>(id[i]);
    int64_t row = findKeyRow(k, n, index, slots, key);
    if (row < 0)
      init.weightsFrom(stream, key, width, dst);
    else
      std::memcpy(dst, values.data<float>() + row * width, width * sizeof(float));
  }
  return llvm::Error::success();
}
OAR_KERNEL(lookup_sorted_table, Device::Cpu, proto::I64, lookupSortedTable);

} // namespace oar::cpu
