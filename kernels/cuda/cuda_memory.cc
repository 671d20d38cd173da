// GPU memory for tensors: a caching allocator (cudaMalloc is slow and synchronising, and a
// training step allocates the same sizes every time) and host<->device copies through a pinned
// staging buffer, registered as the CUDA DeviceMemory at static-initialisation time.
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "support/error.h"
#include "llvm/Support/ErrorHandling.h"

namespace oar::cuda {
namespace {

/// Sizes are rounded so a step's slightly different sizes share blocks: to 512 bytes below
/// 1 MiB, to 1 MiB above.
size_t roundedSize(size_t bytes) {
  size_t unit = bytes < (1u << 20) ? 512 : (1u << 20);
  return (bytes + unit - 1) / unit * unit;
}

class CudaMemory final : public DeviceMemory {
public:
  void *allocate(size_t bytes) override {
    size_t size = roundedSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void *p = it->second.back();
        it->second.pop_back();
        return p;
      }
    }
    void *p = nullptr;
    if (cudaMalloc(&p, size) == cudaSuccess)
      return p;
    cudaGetLastError(); // not the error of the next kernel
    // Out of memory: give the cached blocks back to the driver and try once more.
    emptyCache();
    if (cudaMalloc(&p, size) == cudaSuccess)
      return p;
    cudaGetLastError();
    return nullptr;
  }

  // Blocks are reused in stream order: the next user's work is queued after the last reader's
  // on the same executor stream, so no synchronisation is needed here. That holds for one
  // executor thread per process (a trainer process has one); executors on several threads would
  // need a free list per stream.
  void release(void *p, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    free_[roundedSize(bytes)].push_back(p);
  }

  void zero(void *p, size_t bytes) override { cudaMemsetAsync(p, 0, bytes, stream()); }

  void copy(void *dst, Device dstDevice, const void *src, Device srcDevice,
            size_t bytes) override {
    if (bytes == 0)
      return;
    if (dstDevice == Device::Cuda && srcDevice == Device::Cuda) {
      mustSucceed(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream()),
                  "a device-to-device copy");
      return;
    }
    std::lock_guard<std::mutex> lock(stagingMu_); // one staging buffer per process
    std::byte *staging = stagingBuffer(bytes);
    if (dstDevice == Device::Cuda) {
      // Host to device: the bytes go to pinned memory and the DMA runs while the host goes on;
      // the staging buffer is reused only after its last copy finished (stagingBuffer waits).
      if (!staging) { // no pinned memory to be had: from the caller's memory, waiting for it
        mustSucceed(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream()),
                    "a host-to-device copy");
        mustSucceed(cudaStreamSynchronize(stream()), "a host-to-device copy");
        return;
      }
      std::memcpy(staging, src, bytes);
      mustSucceed(cudaMemcpyAsync(dst, staging, bytes, cudaMemcpyHostToDevice, stream()),
                  "a host-to-device copy");
      if (!stagingFree_)
        cudaEventCreateWithFlags(&stagingFree_, cudaEventDisableTiming);
      if (!stagingFree_ || cudaEventRecord(stagingFree_, stream()) != cudaSuccess)
        mustSucceed(cudaStreamSynchronize(stream()), "a host-to-device copy");
      return;
    }
    // Device to host: the caller reads the bytes next, so wait for them (and for the kernels
    // that made them: their faults show here).
    void *landing = staging ? static_cast<void *>(staging) : dst;
    mustSucceed(cudaMemcpyAsync(landing, src, bytes, cudaMemcpyDeviceToHost, stream()),
                "a device-to-host copy");
    mustSucceed(cudaStreamSynchronize(stream()), "a device-to-host copy");
    if (staging)
      std::memcpy(dst, staging, bytes);
  }

  int count() override {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }

  llvm::Error select(int index) override {
    int n = 0;
    if (cudaError_t err = cudaGetDeviceCount(&n); err != cudaSuccess)
      return makeError("device cuda:{0}: no GPU is usable: {1} ({2})", index,
                       cudaGetErrorString(err), cudaGetErrorName(err));
    if (index >= n)
      return makeError("device cuda:{0}: this process sees {1} GPU{2} (CUDA_VISIBLE_DEVICES "
                       "selects which)",
                       index, n, n == 1 ? "" : "s");
    // The cache and staging buffer hold one device's memory: one GPU per process, as
    // oar-launch --device=cuda gives each trainer.
    if (selected_ >= 0 && selected_ != index)
      return makeError("device cuda:{0}: this process already computes on cuda:{1} (one GPU per "
                       "process)",
                       index, selected_);
    if (llvm::Error err =
            check(cudaSetDevice(index), llvm::formatv("device cuda:{0}", index).str()))
      return err;
    selected_ = index;
    return llvm::Error::success();
  }

private:
  /// The pinned buffer, once its last host-to-device copy is done; nullptr when none can be had.
  std::byte *stagingBuffer(size_t bytes) {
    if (stagingFree_)
      cudaEventSynchronize(stagingFree_);
    if (bytes > stagingBytes_) {
      if (staging_)
        cudaFreeHost(staging_);
      stagingBytes_ = std::max<size_t>(bytes, 1 << 20);
      void *p = nullptr;
      if (cudaMallocHost(&p, stagingBytes_) != cudaSuccess) {
        cudaGetLastError(); // not an error of the next kernel
        p = nullptr;
        stagingBytes_ = 0;
      }
      staging_ = static_cast<std::byte *>(p);
    }
    return staging_;
  }

  void emptyCache() {
    cudaDeviceSynchronize();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto &[size, blocks] : free_)
      for (void *p : blocks)
        cudaFree(p);
    free_.clear();
  }

  /// A failed copy leaves the tensor's bytes undefined: nothing may read them as values.
  static void mustSucceed(cudaError_t status, const char *what) {
    if (status != cudaSuccess)
      llvm::report_fatal_error(llvm::Twine("CUDA error in ") + what + ": " +
                               cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }

  std::mutex mu_;
  std::mutex stagingMu_;
  int selected_ = -1; // the device select() made current
  std::map<size_t, std::vector<void *>> free_; // rounded size -> blocks ready for reuse
  std::byte *staging_ = nullptr;
  size_t stagingBytes_ = 0;
  cudaEvent_t stagingFree_ = nullptr;
};

CudaMemory memory;
[[maybe_unused]] bool registered = registerDeviceMemory(Device::Cuda, &memory);

} // namespace
} // namespace oar::cuda
