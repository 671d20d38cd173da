// Tensor storage.
#include "executor/tensor.h"

#include <cstdlib>
#include <cstring>

namespace oar {

static std::shared_ptr<std::byte> allocate(size_t bytes, bool zero) {
  size_t rounded = (bytes + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  assert(p && "out of memory");
  if (zero)
    std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<std::byte>(static_cast<std::byte *>(p),
                                    [](std::byte *q) { std::free(q); });
}

void Tensor::resize(DType dtype, llvm::ArrayRef<int64_t> dims, bool zero) {
  dtype_ = dtype;
  dims_.assign(dims.begin(), dims.end());
  numel_ = 1;
  for (int64_t d : dims_)
    numel_ *= d;
  size_t need = bytes();
  // Reuse a large-enough buffer: in-place ops (ParamOut = Param) rely on it.
  if (buf_ && need <= capacity_)
    return;
  buf_ = allocate(need, zero);
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
  dims_.assign(dims.begin(), dims.end());
  numel_ = 1;
  for (int64_t d : dims_)
    numel_ *= d;
  buf_ = std::move(buffer);
  capacity_ = bytes();
}

Tensor Tensor::clone() const {
  Tensor t;
  if (!initialized())
    return t;
  t.resize(dtype_, dims_, /*zero=*/false);
  std::memcpy(t.raw(), raw(), bytes());
  return t;
}

} // namespace oar
