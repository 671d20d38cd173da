// CPU kernels of lookup_table and its (dense) gradient.
#include <cstring>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

static llvm::Error checkId(int64_t id, int64_t i, int64_t rows) {
  if (id < 0 || id >= rows)
    return makeError("id {0} at position {1} is outside the table's {2} rows", id, i, rows);
  return llvm::Error::success();
}

template <typename T> static llvm::Error lookupTable(KernelContext &ctx) {
  const Tensor &w = ctx.input("W"), &ids = ctx.input("Ids");
  int64_t rows = w.dim(0), width = w.dim(1), pad = ctx.attrs().getInt("padding_idx");
  T *out = ctx.output("Out").data<T>();
  const int64_t n = ids.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = ids.data<int64_t>()[i];
    if (id == pad) {
      std::fill_n(out + i * width, width, T(0));
      continue;
    }
    if (llvm::Error err = checkId(id, i, rows))
      return err;
    std::memcpy(out + i * width, w.data<T>() + id * width, width * sizeof(T));
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(lookup_table, lookupTable);

template <typename T> static llvm::Error lookupTableGrad(KernelContext &ctx) {
  const Tensor &w = ctx.input("W"), &ids = ctx.input("Ids");
  int64_t rows = w.dim(0), width = w.dim(1), pad = ctx.attrs().getInt("padding_idx");
  const T *dout = ctx.input("Out@GRAD").data<T>();
  Tensor &dw = ctx.output("W@GRAD");
  std::fill_n(dw.data<T>(), dw.numel(), T(0));
  const int64_t n = ids.numel();
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = ids.data<int64_t>()[i];
    if (id == pad)
      continue;
    if (llvm::Error err = checkId(id, i, rows))
      return err;
    T *row = dw.data<T>() + id * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += dout[i * width + j];
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(lookup_table_grad, lookupTableGrad);

} // namespace oar::cpu
