// CUDA kernels that move data: concat, concat_grad, split, reshape, reshape_grad, transpose.
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "kernels/kernel_shapes.h"
#include "support/error.h"

namespace oar::cuda {

/// Viewing a tensor as [outer, dims[axis] * inner] rows, the elements per row along `axis`.
struct AxisView {
  int64_t outer = 1, inner = 1;
};
static AxisView axisView(llvm::ArrayRef<int64_t> dims, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < axis; ++i)
    v.outer *= dims[i];
  for (size_t i = axis + 1; i < dims.size(); ++i)
    v.inner *= dims[i];
  return v;
}

/// Copies pieces[i] (each [outer, len_i * inner]) into (join) or out of the joined tensor: one
/// strided 2-D copy per piece, device to device on the stream.
template <typename T>
static llvm::Error joinOrCut(T *joined, int64_t joinedLen,
                             const std::vector<std::pair<T *, int64_t>> &pieces, AxisView v,
                             bool join, llvm::StringRef what) {
  const size_t wholePitch = static_cast<size_t>(joinedLen * v.inner) * sizeof(T);
  int64_t offset = 0;
  for (auto [ptr, len] : pieces) {
    const size_t width = static_cast<size_t>(len * v.inner) * sizeof(T);
    if (ptr && width && v.outer) {
      T *whole = joined + offset * v.inner;
      cudaError_t st = join ? cudaMemcpy2DAsync(whole, wholePitch, ptr, width, width, v.outer,
                                                cudaMemcpyDeviceToDevice, stream())
                            : cudaMemcpy2DAsync(ptr, width, whole, wholePitch, width, v.outer,
                                                cudaMemcpyDeviceToDevice, stream());
      if (llvm::Error err = check(st, what))
        return err;
    }
    offset += len;
  }
  return llvm::Error::success();
}

template <typename T> static llvm::Error concat(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  int64_t axis = kernels::layoutAxis(ctx, out.rank());
  std::vector<std::pair<T *, int64_t>> pieces;
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    const Tensor &x = ctx.input("X", i);
    pieces.emplace_back(const_cast<T *>(x.data<T>()), x.dim(axis));
  }
  return joinOrCut(out.data<T>(), out.dim(axis), pieces, axisView(out.dims(), axis), true,
                   "concat");
}
OAR_CUDA_ALL_KERNELS(concat, concat);

/// Cuts `whole` into the output slot `slot`, piece sizes taken from `sizes`.
template <typename T>
static llvm::Error cutInto(KernelContext &ctx, const Tensor &whole, llvm::StringRef slot,
                           int64_t axis, const std::vector<int64_t> &sizes, llvm::StringRef what) {
  std::vector<std::pair<T *, int64_t>> pieces;
  for (size_t i = 0; i < sizes.size(); ++i)
    pieces.emplace_back(ctx.hasOutput(slot, i) ? ctx.output(slot, i).data<T>() : nullptr, sizes[i]);
  return joinOrCut(const_cast<T *>(whole.data<T>()), whole.dim(axis), pieces,
                   axisView(whole.dims(), axis), false, what);
}

template <typename T> static llvm::Error concatGrad(KernelContext &ctx) {
  const Tensor &dout = ctx.input("Out@GRAD");
  int64_t axis = kernels::layoutAxis(ctx, dout.rank());
  return cutInto<T>(ctx, dout, "X@GRAD", axis, kernels::concatSizes(ctx, axis), "concat_grad");
}
OAR_CUDA_FLOAT_KERNELS(concat_grad, concatGrad);

template <typename T> static llvm::Error split(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t axis = kernels::layoutAxis(ctx, x.rank());
  return cutInto<T>(ctx, x, "Out", axis, kernels::splitSections(ctx, axis), ctx.op().type());
}
OAR_CUDA_ALL_KERNELS(split, split);
OAR_CUDA_ALL_KERNELS(split_byref, split);

/// out = in, byte for byte (skipped when they already share the buffer).
static llvm::Error copyBytes(void *dst, const void *src, size_t bytes, llvm::StringRef what) {
  if (dst == src || bytes == 0)
    return llvm::Error::success();
  return check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()), what);
}

template <typename T> static llvm::Error reshape(KernelContext &ctx) {
  return copyBytes(ctx.output("Out").raw(), ctx.input("X").raw(), ctx.input("X").bytes(),
                   "reshape");
}
OAR_CUDA_ALL_KERNELS(reshape, reshape);

template <typename T> static llvm::Error reshapeGrad(KernelContext &ctx) {
  return copyBytes(ctx.output("X@GRAD").raw(), ctx.input("Out@GRAD").raw(),
                   ctx.input("Out@GRAD").bytes(), "reshape_grad");
}
OAR_CUDA_FLOAT_KERNELS(reshape_grad, reshapeGrad);

/// Out's dims and, for each of Out's dims, the stride of the X dim it comes from. By value:
/// kernel arguments need no copy to the device.
constexpr int kMaxRank = 8;
struct TransposeMap {
  int rank;
  int64_t outDims[kMaxRank];
  int64_t srcStride[kMaxRank];
};

template <typename T>
__global__ void transposeKernel(const T *in, T *out, int64_t n, TransposeMap map) {
  OAR_CUDA_LOOP(e, n) {
    int64_t rest = e, src = 0;
    for (int i = map.rank - 1; i >= 0; --i) {
      src += (rest % map.outDims[i]) * map.srcStride[i];
      rest /= map.outDims[i];
    }
    out[e] = in[src];
  }
}

template <typename T> static llvm::Error transpose(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  auto perm = ctx.attrs().getInts("axis");
  const int rank = static_cast<int>(x.rank());
  if (rank > kMaxRank)
    return makeError("transpose: {0} has rank {1}; the CUDA kernel handles rank <= {2}",
                     ctx.describeInput("X"), rank, kMaxRank);
  Tensor &out = ctx.output("Out");
  if (out.numel() == 0)
    return llvm::Error::success();
  std::vector<int64_t> inStride(rank, 1);
  for (int i = rank - 2; i >= 0; --i)
    inStride[i] = inStride[i + 1] * x.dim(i + 1);
  TransposeMap map{};
  map.rank = rank;
  for (int i = 0; i < rank; ++i) {
    map.outDims[i] = out.dim(i);
    map.srcStride[i] = inStride[perm[i]];
  }
  OAR_CUDA_LAUNCH(transposeKernel<T>, out.numel(), x.data<T>(), out.data<T>(), out.numel(), map);
  return launched("transpose");
}
OAR_CUDA_ALL_KERNELS(transpose, transpose);

} // namespace oar::cuda
