// CUDA kernel of clip_by_global_norm: squares summed in double by blocks, then by one block that
// computes the CPU's factor on the device (no host round trip); the sum's order is a fixed tree.
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "support/error.h"

namespace oar::cuda {

namespace {

/// Sums part[0, blockDim) into part[0] along a fixed tree, so the result does not depend on
/// timing. blockDim must be a power of two.
__device__ void treeSum(double *part) {
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
}

/// partial[b] = the squares of block b's elements of x (grid-stride).
template <typename T> __global__ void squaresKernel(const T *x, int64_t n, double *partial) {
  __shared__ double part[kThreads];
  double sq = 0;
  OAR_CUDA_LOOP(k, n) { sq += double(x[k]) * x[k]; }
  part[threadIdx.x] = sq;
  treeSum(part);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = part[0];
}

/// One block: factor = min(1, maxNorm / (sqrt(sum of the partials) + 1e-6)), rounded to T.
template <typename T>
__global__ void factorKernel(const double *partial, int64_t count, double maxNorm, T *factor) {
  __shared__ double part[kThreads];
  double sq = 0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x)
    sq += partial[i];
  part[threadIdx.x] = sq;
  treeSum(part);
  if (threadIdx.x == 0) {
    const double r = maxNorm / (sqrt(part[0]) + 1e-6);
    factor[0] = T(r < 1.0 ? r : 1.0); // std::min(1.0, r)
  }
}

template <typename T> __global__ void scaleKernel(const T *x, const T *factor, T *out, int64_t n) {
  const T f = factor[0];
  OAR_CUDA_LOOP(k, n) { out[k] = x[k] * f; }
}

} // namespace

// Out may be X (in place): every squaresKernel runs before the first scaleKernel on the stream.
template <typename T> static llvm::Error clipByGlobalNorm(KernelContext &ctx) {
  const size_t tensors = ctx.inputCount("X");
  // Each tensor's partial sums start at offsets[i]; the factor follows the last.
  std::vector<int64_t> offsets(tensors + 1, 0);
  for (size_t i = 0; i < tensors; ++i) {
    const int64_t n = ctx.input("X", i).numel();
    offsets[i + 1] = offsets[i] + (n > 0 ? blocksFor(n) : 0);
  }
  const int64_t count = offsets[tensors];
  if (count == 0) // no elements: nothing to scale
    return llvm::Error::success();
  // One scratch call for all: a bigger scratch waits for the stream and replaces the buffer.
  auto *partial = static_cast<double *>(scratch(static_cast<size_t>(count + 1) * sizeof(double)));
  if (!partial) {
    cudaGetLastError();
    return makeError("clip_by_global_norm: no device memory for {0} partial sums", count);
  }
  T *factor = reinterpret_cast<T *>(partial + count);
  for (size_t i = 0; i < tensors; ++i) {
    const Tensor &x = ctx.input("X", i);
    if (x.numel() > 0)
      squaresKernel<T><<<blocksFor(x.numel()), kThreads, 0, stream()>>>(x.data<T>(), x.numel(),
                                                                        partial + offsets[i]);
  }
  factorKernel<T><<<1, kThreads, 0, stream()>>>(partial, count,
                                                double(ctx.attrs().getFloat("max_norm")), factor);
  for (size_t i = 0; i < tensors; ++i) {
    const Tensor &x = ctx.input("X", i);
    if (x.numel() > 0)
      OAR_CUDA_LAUNCH(scaleKernel<T>, x.numel(), x.data<T>(), factor,
                      ctx.output("Out", i).data<T>(), x.numel());
  }
  return launched("clip_by_global_norm");
}
OAR_CUDA_FLOAT_KERNELS(clip_by_global_norm, clipByGlobalNorm);

} // namespace oar::cuda
