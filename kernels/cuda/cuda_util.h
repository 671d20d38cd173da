// Shared pieces of the CUDA kernels: the calling thread's stream and cuBLAS handle, error
// checks that become llvm::Errors, launch geometry, and float/double registration.
#pragma once

#include <cstdint>
#include <optional>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "executor/kernel.h"

namespace oar::cuda {

/// The executor thread's stream and its cuBLAS handle bound to that stream, created on first
/// use on the thread's current device. A trainer process runs one executor thread on one GPU;
/// the caching allocator relies on that (cuda_memory.cc).
cudaStream_t stream();
cublasHandle_t blas();

/// An error naming `what` when `status` is not success.
llvm::Error check(cudaError_t status, llvm::StringRef what);
llvm::Error check(cublasStatus_t status, llvm::StringRef what);
/// The error of the kernel launched last on this thread, if any (launches report late).
llvm::Error launched(llvm::StringRef what);

/// A device buffer of at least `bytes` for one kernel's scratch (row ids, per-block sums),
/// owned by the calling thread and reused by the next kernel on the same stream.
void *scratch(size_t bytes);
/// Copies `n` int64s from the host to scratch and returns the device pointer (nullptr when no
/// scratch can be had).
const int64_t *idsOnDevice(const int64_t *host, int64_t n);

/// Copies `bytes` from the device once the stream's work before it is done: for ops whose
/// error depends on values (a label or id out of range), which must come from the op's own call.
llvm::Error copyToHost(void *host, const void *device, size_t bytes, llvm::StringRef what);
/// A scratch word preset to "none" (all ones), where a kernel records the least index of a bad
/// element with atomicMin; nullptr when no scratch can be had.
unsigned long long *badIndexFlag();
/// The index a kernel recorded in `flag`, or nullopt when every element was good; waits for
/// the stream.
llvm::Expected<std::optional<int64_t>> firstBadIndex(const unsigned long long *flag,
                                                     llvm::StringRef what);

/// Threads per block, and blocks for a grid-stride loop over n elements.
constexpr int kThreads = 256;
inline unsigned blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 4096 ? 4096 : b));
}

} // namespace oar::cuda

#ifdef __CUDACC__
/// for (int64_t i : grid-stride indices below n) inside a __global__ function.
#define OAR_CUDA_LOOP(i, n)                                                                       \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);                       \
       i += int64_t(gridDim.x) * blockDim.x)
/// kernel<<<blocks for n, kThreads, 0, stream()>>>(args...)
#define OAR_CUDA_LAUNCH(kernel, n, ...)                                                            \
  kernel<<<::oar::cuda::blocksFor(n), ::oar::cuda::kThreads, 0, ::oar::cuda::stream()>>>(         \
      __VA_ARGS__)
#endif

/// Registers fn<float> and fn<double> as the CUDA kernels of `op`.
#define OAR_CUDA_FLOAT_KERNELS(op, fn)                                                             \
  OAR_KERNEL(op, ::oar::Device::Cuda, ::oar::proto::F32, fn<float>);                               \
  OAR_KERNEL(op, ::oar::Device::Cuda, ::oar::proto::F64, fn<double>)

/// Registers fn<T> for every dtype (layout ops that only move data).
#define OAR_CUDA_ALL_KERNELS(op, fn)                                                               \
  OAR_CUDA_FLOAT_KERNELS(op, fn);                                                                  \
  OAR_KERNEL(op, ::oar::Device::Cuda, ::oar::proto::I32, fn<int32_t>);                             \
  OAR_KERNEL(op, ::oar::Device::Cuda, ::oar::proto::I64, fn<int64_t>)
