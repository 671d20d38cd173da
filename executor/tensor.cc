// Tensor storage: 64-byte aligned host memory, or an accelerator's (executor/device.h).
#include "executor/tensor.h"

#include <cstdlib>
#include <cstring>

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

static std::shared_ptr<std::byte> allocateHost(size_t bytes, bool zero) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  assert(p && "out of memory");
  if (zero)
    std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte *>(p),
                                    [](std::byte *q) { std::free(q); });
}

static std::shared_ptr<std::byte> allocate(Device device, size_t bytes, bool zero) {
  if (device == Device::Cpu)
    return allocateHost(bytes, zero);
  DeviceMemory *memory = deviceMemory(device);
  // The executor checks the device with usePlace() before it places a tensor there.
  assert(memory && "a tensor placed on a device whose library is not linked");
  size_t size = bytes == 0 ? 64 : bytes;
  void *p = memory->allocate(size);
  if (!p) // no llvm::Error path through resize(): the process cannot go on without the memory
    llvm::report_fatal_error(llvm::Twine(llvm::formatv("out of {0} memory allocating {1} bytes "
                                                       "(lower the batch size)",
                                                       deviceName(device), size)
                                             .str()));
  if (zero)
    memory->zero(p, size);
  return std::shared_ptr<std::byte>(static_cast<std::byte *>(p),
                                    [memory, size](std::byte *q) { memory->release(q, size); });
}

void Tensor::resize(DType dtype, llvm::ArrayRef<int64_t> dims, bool zero, Device device) {
  dtype_ = dtype;
  dims_.assign(dims.begin(), dims.end());
  numel_ = 1;
  for (int64_t d : dims_)
    numel_ *= d;
  size_t need = bytes();
  // Reuse a large-enough buffer: in-place ops (ParamOut = Param) rely on it.
  if (buf_ && need <= capacity_ && device == device_)
    return;
  buf_ = allocate(device, need, zero);
  device_ = device;
  capacity_ = need;
}

void Tensor::reshape(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  assert(n == numel_ && "reshape must keep the element count");
  dims_.assign(dims.begin(), dims.end());
}

void Tensor::adopt(DType dtype, llvm::ArrayRef<int64_t> dims, std::shared_ptr<std::byte> buffer) {
  dtype_ = dtype;
  device_ = Device::Cpu;
  dims_.assign(dims.begin(), dims.end());
  numel_ = 1;
  for (int64_t d : dims_)
    numel_ *= d;
  buf_ = std::move(buffer);
  capacity_ = bytes();
}

/// Copies `src`'s bytes into `dst`, which has its size, across devices as needed.
static void copyBytes(Tensor &dst, const Tensor &src) {
  if (dst.device() == Device::Cpu && src.device() == Device::Cpu) {
    std::memcpy(dst.raw(), src.raw(), src.bytes());
    return;
  }
  Device accelerator = dst.device() == Device::Cpu ? src.device() : dst.device();
  deviceMemory(accelerator)->copy(dst.raw(), dst.device(), src.raw(), src.device(), src.bytes());
}

Tensor Tensor::clone() const {
  Tensor t;
  if (!initialized())
    return t;
  t.resize(dtype_, dims_, /*zero=*/false, device_);
  copyBytes(t, *this);
  return t;
}

Tensor Tensor::to(Device device) const {
  if (device == device_ || !initialized())
    return *this;
  Tensor t;
  t.resize(dtype_, dims_, /*zero=*/false, device);
  copyBytes(t, *this);
  return t;
}

void Tensor::setZero() {
  if (!buf_)
    return;
  if (device_ == Device::Cpu)
    std::memset(raw(), 0, bytes());
  else
    deviceMemory(device_)->zero(raw(), bytes());
}

int64_t rowWidth(const Tensor &t) {
  int64_t w = 1;
  for (size_t i = 1; i < t.rank(); ++i)
    w *= t.dim(i);
  return w;
}

} // namespace oar
