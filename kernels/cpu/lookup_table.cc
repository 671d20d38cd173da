// CPU kernels of lookup_table and its gradient (dense, or selected rows with is_sparse).
#include <cstring>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

static llvm::Error checkId(const KernelContext &ctx, int64_t id, int64_t i, int64_t rows) {
  if (id < 0 || id >= rows)
    return makeError("{0}: id {1} at position {2} is outside the table {3}'s {4} rows",
                     ctx.describeInput("Ids"), id, i, opInputs(ctx.op(), "W")[0], rows);
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
    if (llvm::Error err = checkId(ctx, id, i, rows))
      return err;
    std::memcpy(out + i * width, w.data<T>() + id * width, width * sizeof(T));
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(lookup_table, lookupTable);

// W@GRAD as selected rows: one row per id looked up, in lookup order, repeats kept.
template <typename T> static llvm::Error lookupTableSparseGrad(KernelContext &ctx) {
  const Tensor &w = ctx.input("W"), &ids = ctx.input("Ids");
  int64_t rows = w.dim(0), width = w.dim(1), pad = ctx.attrs().getInt("padding_idx");
  const T *dout = ctx.input("Out@GRAD").data<T>();
  const int64_t n = ids.numel();
  SelectedRows &dw = ctx.outputRows("W@GRAD");
  dw.height = rows;
  dw.rows.clear();
  dw.rows.reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = ids.data<int64_t>()[i];
    if (id == pad)
      continue;
    if (llvm::Error err = checkId(ctx, id, i, rows))
      return err;
    dw.rows.push_back(id);
  }
  dw.values.resize(w.dtype(), {static_cast<int64_t>(dw.rows.size()), width}, /*zero=*/false);
  T *dst = dw.values.data<T>();
  for (int64_t i = 0, k = 0; i < n; ++i)
    if (ids.data<int64_t>()[i] != pad)
      std::memcpy(dst + k++ * width, dout + i * width, width * sizeof(T));
  return llvm::Error::success();
}

template <typename T> static llvm::Error lookupTableGrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("is_sparse"))
    return lookupTableSparseGrad<T>(ctx);
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
    if (llvm::Error err = checkId(ctx, id, i, rows))
      return err;
    T *row = dw.data<T>() + id * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += dout[i * width + j];
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(lookup_table_grad, lookupTableGrad);

} // namespace oar::cpu
