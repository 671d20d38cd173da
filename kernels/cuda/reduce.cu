// CUDA kernels of mean and reduce_sum, and their gradients.
#include <algorithm>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "support/error.h"

namespace oar::cuda {

namespace {

/// Sums part[0, blockDim) into part[0] along a fixed tree, so the result does not depend on
/// timing. blockDim must be a power of two.
template <typename A> __device__ void treeSum(A *part) {
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
}

template <typename T> __global__ void meanBlock(const T *x, T *out, int64_t n) {
  __shared__ double part[kThreads]; // in double, as on the CPU: a big batch's loss sums here
  double sum = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    sum += x[i];
  part[threadIdx.x] = sum;
  treeSum(part);
  if (threadIdx.x == 0)
    out[0] = static_cast<T>(part[0] / (n > 1 ? n : 1));
}

template <typename T> __global__ void meanGradFill(const T *dout, T *dx, int64_t n) {
  OAR_CUDA_LOOP(i, n) { dx[i] = dout[0] / static_cast<T>(n > 1 ? n : 1); }
}

/// Up to kMaxDims dims with a stride along each, passed to kernels by value.
constexpr int kMaxDims = 16;
struct Dims {
  int n = 0;
  int64_t size[kMaxDims] = {}, stride[kMaxDims] = {};
};

/// The offset, by `d`'s strides, of the i-th multi-index of a row-major walk over `d`'s sizes.
__device__ int64_t offsetOf(const Dims &d, int64_t i) {
  int64_t off = 0;
  for (int k = d.n - 1; k > 0; --k) {
    off += i % d.size[k] * d.stride[k];
    i /= d.size[k];
  }
  return d.n > 0 ? off + i * d.stride[0] : 0;
}

/// reduce_sum's dims after dropping size-1 dims and merging neighbours that are both summed or
/// both kept (usually leaving one or two of each).
struct ReduceShape {
  Dims kept;   // Out's dims, each with its stride in X
  Dims summed; // the summed dims, each with its stride in X; at least one (maybe of size 1)
  Dims toOut;  // X's dims, each with Out's stride along it (0 along summed dims)
  int64_t outNumel = 1, count = 1; // Out's elements, and the elements of X summed into each
};

llvm::Expected<ReduceShape> reduceShape(const KernelContext &ctx) {
  llvm::ArrayRef<int64_t> dims = ctx.input("X").dims();
  int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> reduced(rank, ctx.attrs().getBool("reduce_all"));
  for (int64_t d : ctx.attrs().getInts("dim")) {
    if (d < -rank || d >= rank)
      return makeError("reduce dim {0} is outside X's rank {1}", d, rank);
    reduced[d < 0 ? d + rank : d] = true;
  }
  std::vector<std::pair<int64_t, bool>> merged; // (size, summed)
  for (int64_t i = 0; i < rank; ++i) {
    if (dims[i] == 1)
      continue;
    if (!merged.empty() && merged.back().second == reduced[i])
      merged.back().first *= dims[i];
    else
      merged.push_back({dims[i], reduced[i]});
  }
  if (merged.size() > size_t(kMaxDims))
    return makeError("reduce_sum on CUDA handles at most {0} alternately summed and kept dims",
                     kMaxDims);
  ReduceShape s;
  s.toOut.n = static_cast<int>(merged.size());
  int64_t xStride = 1;
  for (int i = s.toOut.n - 1; i >= 0; --i) { // innermost first: kept and summed come reversed
    auto [size, summed] = merged[i];
    Dims &d = summed ? s.summed : s.kept;
    d.size[d.n] = size;
    d.stride[d.n++] = xStride;
    s.toOut.size[i] = size;
    s.toOut.stride[i] = summed ? 0 : s.outNumel;
    (summed ? s.count : s.outNumel) *= size;
    xStride *= size;
  }
  for (Dims *d : {&s.kept, &s.summed}) {
    std::reverse(d->size, d->size + d->n);
    std::reverse(d->stride, d->stride + d->n);
  }
  if (s.summed.n == 0) { // nothing summed: one element per output
    s.summed.n = 1;
    s.summed.size[0] = 1;
  }
  return s;
}

// One thread per output, adding its elements in X's order like the CPU kernel: the innermost
// summed dim in a plain strided loop, the outer ones through offsetOf.
template <typename T> __global__ void sumPerThread(const T *x, T *out, ReduceShape s) {
  const int64_t inner = s.summed.size[s.summed.n - 1], step = s.summed.stride[s.summed.n - 1];
  OAR_CUDA_LOOP(o, s.outNumel) {
    const T *base = x + offsetOf(s.kept, o);
    T sum = 0;
    for (int64_t t = 0; t < s.count; t += inner) {
      const T *p = base + offsetOf(s.summed, t);
      for (int64_t k = 0; k < inner; ++k)
        sum += p[k * step];
    }
    out[o] = sum;
  }
}

// One block per output, for few outputs that each sum many elements (reduce_all).
template <typename T> __global__ void sumPerBlock(const T *x, T *out, ReduceShape s) {
  __shared__ T part[kThreads];
  for (int64_t o = blockIdx.x; o < s.outNumel; o += gridDim.x) {
    const T *base = x + offsetOf(s.kept, o);
    T sum = 0;
    for (int64_t t = threadIdx.x; t < s.count; t += blockDim.x)
      sum += base[offsetOf(s.summed, t)];
    part[threadIdx.x] = sum;
    treeSum(part);
    if (threadIdx.x == 0)
      out[o] = part[0];
    __syncthreads(); // part[0] is read before the next output overwrites it
  }
}

template <typename T> __global__ void sumGradElems(const T *dout, T *dx, int64_t n, Dims toOut) {
  OAR_CUDA_LOOP(e, n) { dx[e] = dout[offsetOf(toOut, e)]; }
}

} // namespace

template <typename T> static llvm::Error mean(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  meanBlock<T><<<1, kThreads, 0, stream()>>>(x.data<T>(), ctx.output("Out").data<T>(), x.numel());
  return launched("mean");
}
OAR_CUDA_FLOAT_KERNELS(mean, mean);

template <typename T> static llvm::Error meanGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(meanGradFill<T>, x.numel(), ctx.input("Out@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), x.numel());
  return launched("mean_grad");
}
OAR_CUDA_FLOAT_KERNELS(mean_grad, meanGrad);

template <typename T> static llvm::Error reduceSum(KernelContext &ctx) {
  auto s = reduceShape(ctx);
  if (!s)
    return s.takeError();
  const T *x = ctx.input("X").data<T>();
  T *out = ctx.output("Out").data<T>();
  if (s->count >= kThreads && s->count > s->outNumel) {
    auto blocks = static_cast<unsigned>(std::clamp<int64_t>(s->outNumel, 1, 4096));
    sumPerBlock<T><<<blocks, kThreads, 0, stream()>>>(x, out, *s);
  } else {
    OAR_CUDA_LAUNCH(sumPerThread<T>, s->outNumel, x, out, *s);
  }
  return launched("reduce_sum");
}
OAR_CUDA_FLOAT_KERNELS(reduce_sum, reduceSum);

template <typename T> static llvm::Error reduceSumGrad(KernelContext &ctx) {
  auto s = reduceShape(ctx);
  if (!s)
    return s.takeError();
  int64_t n = ctx.input("X").numel();
  OAR_CUDA_LAUNCH(sumGradElems<T>, n, ctx.input("Out@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), n, s->toOut);
  return launched("reduce_sum_grad");
}
OAR_CUDA_FLOAT_KERNELS(reduce_sum_grad, reduceSumGrad);

} // namespace oar::cuda
