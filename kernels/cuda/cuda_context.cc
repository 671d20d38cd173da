// The CUDA kernels' per-thread stream, cuBLAS handle and scratch, and their error checks.
#include "kernels/cuda/cuda_util.h"

#include "support/error.h"

namespace oar::cuda {

namespace {
/// What one executor thread holds on its device; released when the thread ends.
struct ThreadState {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  void *scratch = nullptr;
  size_t scratchBytes = 0;
  ~ThreadState() {
    if (scratch)
      cudaFree(scratch);
    if (blas)
      cublasDestroy(blas);
    if (stream)
      cudaStreamDestroy(stream);
  }
};
thread_local ThreadState state;
} // namespace

cudaStream_t stream() {
  if (!state.stream)
    cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking);
  return state.stream;
}

cublasHandle_t blas() {
  if (!state.blas) {
    cublasCreate(&state.blas);
    cublasSetStream(state.blas, stream());
  }
  return state.blas;
}

llvm::Error check(cudaError_t status, llvm::StringRef what) {
  if (status == cudaSuccess)
    return llvm::Error::success();
  return makeError("{0}: CUDA error {1}: {2}", what, cudaGetErrorName(status),
                   cudaGetErrorString(status));
}

llvm::Error check(cublasStatus_t status, llvm::StringRef what) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return llvm::Error::success();
  return makeError("{0}: cuBLAS error {1}", what, cublasGetStatusString(status));
}

llvm::Error launched(llvm::StringRef what) { return check(cudaGetLastError(), what); }

void *scratch(size_t bytes) {
  if (bytes > state.scratchBytes) {
    // The stream may still read the old buffer.
    cudaStreamSynchronize(stream());
    if (state.scratch)
      cudaFree(state.scratch);
    state.scratchBytes = std::max<size_t>(bytes, 1 << 16);
    if (cudaMalloc(&state.scratch, state.scratchBytes) != cudaSuccess) {
      cudaGetLastError();
      state.scratch = nullptr;
      state.scratchBytes = 0;
    }
  }
  return state.scratch;
}

const int64_t *idsOnDevice(const int64_t *host, int64_t n) {
  auto *dev = static_cast<int64_t *>(scratch(static_cast<size_t>(n) * sizeof(int64_t)));
  if (!dev) {
    cudaGetLastError(); // the failed cudaMalloc is reported by the caller, not the next kernel
    return nullptr;
  }
  // Synchronous with respect to the host buffer: the caller may free it right after.
  cudaMemcpyAsync(dev, host, static_cast<size_t>(n) * sizeof(int64_t), cudaMemcpyHostToDevice,
                  stream());
  cudaStreamSynchronize(stream());
  return dev;
}

llvm::Error copyToHost(void *host, const void *device, size_t bytes, llvm::StringRef what) {
  if (bytes == 0)
    return llvm::Error::success();
  if (llvm::Error err =
          check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream()), what))
    return err;
  return check(cudaStreamSynchronize(stream()), what);
}

unsigned long long *badIndexFlag() {
  auto *flag = static_cast<unsigned long long *>(scratch(sizeof(unsigned long long)));
  if (flag)
    cudaMemsetAsync(flag, 0xff, sizeof *flag, stream());
  return flag;
}

llvm::Expected<std::optional<int64_t>> firstBadIndex(const unsigned long long *flag,
                                                     llvm::StringRef what) {
  unsigned long long first = 0;
  if (llvm::Error err = copyToHost(&first, flag, sizeof first, what))
    return err;
  if (first == ~0ull)
    return std::nullopt;
  return static_cast<int64_t>(first);
}

} // namespace oar::cuda
