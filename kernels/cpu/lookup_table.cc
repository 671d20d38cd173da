// CPU kernels of lookup_table and its gradient (dense, or selected rows with is_sparse).
#include <cstring>
#include <vector>

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
  const int64_t *idv = ids.data<int64_t>();
  constexpr int64_t kAhead = 8; // a large table's rows miss the cache: overlap the misses
  for (int64_t i = 0; i < n; ++i) {
    if (i + kAhead < n && idv[i + kAhead] >= 0 && idv[i + kAhead] < rows)
      __builtin_prefetch(w.data<T>() + idv[i + kAhead] * width);
    int64_t id = idv[i];
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
/// Calls fn(position, id) for every id looked up except padding_idx, each checked against the
/// table's rows: what the dense and the sparse gradient both walk.
template <typename Fn> static llvm::Error forEachGradId(KernelContext &ctx, Fn fn) {
  const Tensor &ids = ctx.input("Ids");
  int64_t rows = ctx.input("W").dim(0), pad = ctx.attrs().getInt("padding_idx");
  const int64_t *id = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (id[i] == pad)
      continue;
    if (llvm::Error err = checkId(ctx, id[i], i, rows))
      return err;
    fn(i, id[i]);
  }
  return llvm::Error::success();
}

template <typename T> static llvm::Error lookupTableSparseGrad(KernelContext &ctx) {
  const Tensor &w = ctx.input("W");
  int64_t width = w.dim(1);
  const T *dout = ctx.input("Out@GRAD").data<T>();
  SelectedRows &dw = ctx.outputRows("W@GRAD");
  dw.height = w.dim(0);
  dw.rows.clear();
  std::vector<int64_t> positions; // where each kept id stands in Ids
  if (llvm::Error err = forEachGradId(ctx, [&](int64_t i, int64_t id) {
        dw.rows.push_back(id);
        positions.push_back(i);
      }))
    return err;
  dw.values.resize(w.dtype(), {static_cast<int64_t>(dw.rows.size()), width}, /*zero=*/false);
  T *dst = dw.values.data<T>();
  for (size_t k = 0; k < positions.size(); ++k)
    std::memcpy(dst + k * width, dout + positions[k] * width, width * sizeof(T));
  return llvm::Error::success();
}

template <typename T> static llvm::Error lookupTableGrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("is_sparse"))
    return lookupTableSparseGrad<T>(ctx);
  int64_t width = ctx.input("W").dim(1);
  const T *dout = ctx.input("Out@GRAD").data<T>();
  Tensor &dw = ctx.output("W@GRAD");
  std::fill_n(dw.data<T>(), dw.numel(), T(0));
  return forEachGradId(ctx, [&](int64_t i, int64_t id) {
    T *row = dw.data<T>() + id * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += dout[i * width + j];
  });
}
OAR_CPU_FLOAT_KERNELS(lookup_table_grad, lookupTableGrad);

} // namespace oar::cpu
