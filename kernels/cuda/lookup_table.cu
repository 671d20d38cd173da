// CUDA kernels of lookup_table and its gradient (dense, or selected rows with is_sparse).
#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "support/error.h"

namespace oar::cuda {

static llvm::Error checkId(const KernelContext &ctx, int64_t id, int64_t i, int64_t rows) {
  if (id < 0 || id >= rows)
    return makeError("{0}: id {1} at position {2} is outside the table {3}'s {4} rows",
                     ctx.describeInput("Ids"), id, i, opInputs(ctx.op(), "W")[0], rows);
  return llvm::Error::success();
}

/// The ids copied to the host, where they are checked (with the CPU kernel's error) and grouped.
static llvm::Error idsOnHost(const Tensor &ids, std::vector<int64_t> &host, llvm::StringRef what) {
  host.resize(ids.numel());
  return copyToHost(host.data(), ids.data<int64_t>(), ids.bytes(), what);
}

/// Positions of the ids looked up except padding_idx, each checked against the table's rows:
/// what the dense and the sparse gradient both walk.
static llvm::Error gradPositions(const KernelContext &ctx, const std::vector<int64_t> &ids,
                                 std::vector<int64_t> &positions) {
  int64_t rows = ctx.input("W").dim(0), pad = ctx.attrs().getInt("padding_idx");
  for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i) {
    if (ids[i] == pad)
      continue;
    if (llvm::Error err = checkId(ctx, ids[i], i, rows))
      return err;
    positions.push_back(i);
  }
  return llvm::Error::success();
}

/// out[i] = W[ids[i]], or zeros for padding_idx; one thread per element of Out.
template <typename T>
__global__ void gatherRows(const T *w, const int64_t *ids, int64_t pad, int64_t width, T *out,
                           int64_t total) {
  OAR_CUDA_LOOP(e, total) {
    const int64_t id = ids[e / width];
    out[e] = id == pad ? T(0) : w[id * width + e % width];
  }
}

template <typename T> static llvm::Error lookupTable(KernelContext &ctx) {
  const Tensor &w = ctx.input("W"), &ids = ctx.input("Ids");
  int64_t rows = w.dim(0), width = w.dim(1), pad = ctx.attrs().getInt("padding_idx");
  std::vector<int64_t> host;
  if (llvm::Error err = idsOnHost(ids, host, "lookup_table"))
    return err;
  for (int64_t i = 0; i < static_cast<int64_t>(host.size()); ++i)
    if (host[i] != pad)
      if (llvm::Error err = checkId(ctx, host[i], i, rows))
        return err;
  const int64_t total = ids.numel() * width;
  if (total == 0)
    return llvm::Error::success();
  OAR_CUDA_LAUNCH(gatherRows<T>, total, w.data<T>(), ids.data<int64_t>(), pad, width,
                  ctx.output("Out").data<T>(), total);
  return launched("lookup_table");
}
OAR_CUDA_FLOAT_KERNELS(lookup_table, lookupTable);

/// Row k of the selected rows = Out@GRAD row positions[k].
template <typename T>
__global__ void pickRows(const T *dout, const int64_t *positions, int64_t width, T *dst,
                         int64_t total) {
  OAR_CUDA_LOOP(e, total) { dst[e] = dout[positions[e / width] * width + e % width]; }
}

// W@GRAD as selected rows: one row per id looked up, in lookup order, repeats kept.
template <typename T>
static llvm::Error lookupTableSparseGrad(KernelContext &ctx, const std::vector<int64_t> &ids) {
  const Tensor &w = ctx.input("W");
  int64_t width = w.dim(1);
  SelectedRows &dw = ctx.outputRows("W@GRAD");
  dw.height = w.dim(0);
  dw.rows.clear();
  std::vector<int64_t> positions; // where each kept id stands in Ids
  if (llvm::Error err = gradPositions(ctx, ids, positions))
    return err;
  for (int64_t i : positions)
    dw.rows.push_back(ids[i]);
  const int64_t count = static_cast<int64_t>(positions.size());
  dw.values.resize(w.dtype(), {count, width}, /*zero=*/false, Device::Cuda);
  if (count * width == 0)
    return llvm::Error::success();
  const int64_t *devPositions = idsOnDevice(positions.data(), count);
  if (!devPositions)
    return makeError("lookup_table_grad: no device memory for {0} ids", count);
  OAR_CUDA_LAUNCH(pickRows<T>, count * width, ctx.input("Out@GRAD").data<T>(), devPositions, width,
                  dw.values.data<T>(), count * width);
  return launched("lookup_table_grad");
}

/// Dense W@GRAD, one thread per (distinct id, column): the Out@GRAD rows of that id added in
/// lookup order, as the CPU's += does. groups = [ids (u), offsets (u + 1), positions].
template <typename T>
__global__ void sumRows(const T *dout, const int64_t *groups, int64_t distinct, int64_t width,
                        T *dw, int64_t total) {
  const int64_t *offsets = groups + distinct, *positions = offsets + distinct + 1;
  OAR_CUDA_LOOP(e, total) {
    const int64_t u = e / width, j = e % width;
    T acc = 0;
    for (int64_t q = offsets[u]; q < offsets[u + 1]; ++q)
      acc += dout[positions[q] * width + j];
    dw[groups[u] * width + j] = acc;
  }
}

template <typename T> static llvm::Error lookupTableGrad(KernelContext &ctx) {
  std::vector<int64_t> ids;
  if (llvm::Error err = idsOnHost(ctx.input("Ids"), ids, "lookup_table_grad"))
    return err;
  if (ctx.attrs().getBool("is_sparse"))
    return lookupTableSparseGrad<T>(ctx, ids);
  int64_t width = ctx.input("W").dim(1);
  Tensor &dw = ctx.output("W@GRAD");
  std::vector<int64_t> positions;
  if (llvm::Error err = gradPositions(ctx, ids, positions))
    return err;
  if (dw.numel() == 0)
    return llvm::Error::success();
  // Rows no id touches stay zero.
  if (llvm::Error err =
          check(cudaMemsetAsync(dw.raw(), 0, dw.bytes(), stream()), "lookup_table_grad"))
    return err;
  if (positions.empty())
    return llvm::Error::success();
  // Group the positions by id, each group in lookup order (stable sort).
  std::stable_sort(positions.begin(), positions.end(),
                   [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
  std::vector<int64_t> distinct, offsets;
  for (size_t q = 0; q < positions.size(); ++q)
    if (q == 0 || ids[positions[q]] != ids[positions[q - 1]]) {
      distinct.push_back(ids[positions[q]]);
      offsets.push_back(static_cast<int64_t>(q));
    }
  offsets.push_back(static_cast<int64_t>(positions.size()));
  const int64_t u = static_cast<int64_t>(distinct.size());
  std::vector<int64_t> groups = std::move(distinct);
  groups.insert(groups.end(), offsets.begin(), offsets.end());
  groups.insert(groups.end(), positions.begin(), positions.end());
  const int64_t *devGroups = idsOnDevice(groups.data(), static_cast<int64_t>(groups.size()));
  if (!devGroups)
    return makeError("lookup_table_grad: no device memory for {0} ids", positions.size());
  OAR_CUDA_LAUNCH(sumRows<T>, u * width, ctx.input("Out@GRAD").data<T>(), devGroups, u, width,
                  dw.data<T>(), u * width);
  return launched("lookup_table_grad");
}
OAR_CUDA_FLOAT_KERNELS(lookup_table_grad, lookupTableGrad);

} // namespace oar::cuda
