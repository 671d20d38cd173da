// CPU kernels that move data: concat, concat_grad, split, reshape, reshape_grad, transpose.
#include <cstring>

#include "kernels/cpu/cpu_util.h"
#include "kernels/kernel_shapes.h"

namespace oar::cpu {

/// Viewing a tensor as [outer, dims[axis] * inner] rows, the bytes per row along `axis`.
struct AxisView {
  int64_t outer = 1, inner = 1;
};
static AxisView axisView(llvm::ArrayRef<int64_t> dims, int64_t axis) {
  if (axis < 0)
    axis += static_cast<int64_t>(dims.size());
  AxisView v;
  for (int64_t i = 0; i < axis; ++i)
    v.outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    v.inner *= dims[i];
  return v;
}

/// Copies pieces[i] (each [outer, len_i * inner]) into/out of the joined tensor.
template <typename T>
static void joinOrCut(T *joined, int64_t joinedLen, std::vector<std::pair<T *, int64_t>> pieces,
                      AxisView v, bool join) {
  int64_t offset = 0;
  for (auto [ptr, len] : pieces) {
    if (ptr)
      for (int64_t o = 0; o < v.outer; ++o) {
        T *whole = joined + (o * joinedLen + offset) * v.inner;
        T *part = ptr + o * len * v.inner;
        if (join)
          std::memcpy(whole, part, len * v.inner * sizeof(T));
        else
          std::memcpy(part, whole, len * v.inner * sizeof(T));
      }
    offset += len;
  }
}

template <typename T> static llvm::Error concat(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  int64_t axis = kernels::layoutAxis(ctx, out.rank());
  std::vector<std::pair<T *, int64_t>> pieces;
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    const Tensor &x = ctx.input("X", i);
    pieces.emplace_back(const_cast<T *>(x.data<T>()), x.dim(axis));
  }
  joinOrCut(out.data<T>(), out.dim(axis), pieces, axisView(out.dims(), axis), true);
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(concat, concat);

/// Cuts `whole` into the output slot `slot`, piece sizes taken from `sizes`.
template <typename T>
static void cutInto(KernelContext &ctx, const Tensor &whole, llvm::StringRef slot, int64_t axis,
                    const std::vector<int64_t> &sizes) {
  std::vector<std::pair<T *, int64_t>> pieces;
  for (size_t i = 0; i < sizes.size(); ++i)
    pieces.emplace_back(ctx.hasOutput(slot, i) ? ctx.output(slot, i).data<T>() : nullptr, sizes[i]);
  joinOrCut(const_cast<T *>(whole.data<T>()), whole.dim(axis), pieces, axisView(whole.dims(), axis),
            false);
}

template <typename T> static llvm::Error concatGrad(KernelContext &ctx) {
  const Tensor &dout = ctx.input("Out@GRAD");
  int64_t axis = kernels::layoutAxis(ctx, dout.rank());
  cutInto<T>(ctx, dout, "X@GRAD", axis, kernels::concatSizes(ctx, axis));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(concat_grad, concatGrad);

template <typename T> static llvm::Error split(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t axis = kernels::layoutAxis(ctx, x.rank());
  cutInto<T>(ctx, x, "Out", axis, kernels::splitSections(ctx, axis));
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(split, split);
OAR_CPU_ALL_KERNELS(split_byref, split);

template <typename T> static llvm::Error reshape(KernelContext &ctx) {
  std::memcpy(ctx.output("Out").raw(), ctx.input("X").raw(), ctx.input("X").bytes());
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(reshape, reshape);

template <typename T> static llvm::Error reshapeGrad(KernelContext &ctx) {
  std::memcpy(ctx.output("X@GRAD").raw(), ctx.input("Out@GRAD").raw(),
              ctx.input("Out@GRAD").bytes());
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(reshape_grad, reshapeGrad);

template <typename T> static llvm::Error transpose(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  auto perm = ctx.attrs().getInts("axis");
  size_t rank = x.rank();
  std::vector<int64_t> inStride(rank, 1);
  for (int64_t i = static_cast<int64_t>(rank) - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * x.dim(i + 1);
  Tensor &out = ctx.output("Out");
  std::vector<int64_t> idx(rank, 0);
  const T *in = x.data<T>();
  T *o = out.data<T>();
  for (int64_t e = 0; e < out.numel(); ++e) {
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i)
      src += idx[i] * inStride[perm[i]];
    o[e] = in[src];
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; --i) {
      if (++idx[i] < out.dim(i))
        break;
      idx[i] = 0;
    }
  }
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(transpose, transpose);

} // namespace oar::cpu
