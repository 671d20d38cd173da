// A dense tensor: dtype, dims and a shared, 64-byte aligned buffer.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "executor/device.h"
#include "ir/program.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/StringSaver.h"

namespace oar {

template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return proto::F32; }
template <> constexpr DType dtypeOf<double>() { return proto::F64; }
template <> constexpr DType dtypeOf<int32_t>() { return proto::I32; }
template <> constexpr DType dtypeOf<int64_t>() { return proto::I64; }

/// A dense tensor on one device. Copies share the buffer (like a shared_ptr); use clone() for a
/// deep copy. data() of a CUDA tensor is a device pointer: only CUDA kernels may dereference it;
/// host code reads a tensor through onHost().
class Tensor {
public:
  Tensor() = default;
  /// Allocates zeroed storage.
  Tensor(DType dtype, llvm::ArrayRef<int64_t> dims) { resize(dtype, dims); }

  /// Gives the tensor this type on `device`; keeps the buffer (and its data) when it is on that
  /// device and large enough. New storage is zeroed unless `zero` is false (for callers that
  /// overwrite every byte).
  void resize(DType dtype, llvm::ArrayRef<int64_t> dims, bool zero = true,
              Device device = Device::Cpu);
  /// Changes dims without touching data; the element count must not change.
  void reshape(llvm::ArrayRef<int64_t> dims);
  /// A deep copy on the same device.
  Tensor clone() const;
  /// This tensor on `device`: itself (sharing the buffer) when it is there already, else a copy.
  Tensor to(Device device) const;
  /// Sets every element to zero, on whichever device the tensor lives.
  void setZero();
  /// Makes this tensor a view of `buffer`, which holds at least dims x dtype bytes and whose
  /// owner lives as long as any tensor sharing it: received bytes become a tensor without a copy.
  void adopt(DType dtype, llvm::ArrayRef<int64_t> dims, std::shared_ptr<std::byte> buffer);

  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  llvm::ArrayRef<int64_t> dims() const { return dims_; }
  int64_t dim(size_t i) const { return dims_[i]; }
  size_t rank() const { return dims_.size(); }
  int64_t numel() const { return numel_; }
  size_t bytes() const { return static_cast<size_t>(numel_) * dtypeSize(dtype_); }
  bool initialized() const { return dtype_ != proto::DTYPE_UNSET; }

  void *raw() { return buf_.get(); }
  const void *raw() const { return buf_.get(); }
  template <typename T> T *data() {
    assert(dtype_ == dtypeOf<T>() && "tensor dtype does not match the requested type");
    return static_cast<T *>(raw());
  }
  template <typename T> const T *data() const {
    assert(dtype_ == dtypeOf<T>() && "tensor dtype does not match the requested type");
    return static_cast<const T *>(raw());
  }
  /// The buffer's owner, so a zero-copy sender can keep it alive.
  std::shared_ptr<std::byte> buffer() const { return buf_; }
  /// Whether no other tensor, and no send in flight, shares the buffer: its bytes may then be
  /// overwritten without anyone else seeing it.
  bool ownsBufferAlone() const { return buf_.use_count() == 1; }

  template <typename T>
  static Tensor fromVector(llvm::ArrayRef<int64_t> dims, const std::vector<T> &values) {
    Tensor t(dtypeOf<T>(), dims);
    assert(static_cast<int64_t>(values.size()) == t.numel() && "value count must match dims");
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T> std::vector<T> toVector() const {
    return std::vector<T>(data<T>(), data<T>() + numel_);
  }

private:
  DType dtype_ = proto::DTYPE_UNSET;
  Device device_ = Device::Cpu;
  llvm::SmallVector<int64_t, 4> dims_;
  int64_t numel_ = 0;
  size_t capacity_ = 0;
  std::shared_ptr<std::byte> buf_;
};

/// Elements per row of `t` viewed as [dim 0, the rest]: the product of the dims after the first
/// (1 for a scalar or a vector), however many rows it has (a parameter's, a table's, a block's).
int64_t rowWidth(const Tensor &t);

/// `t` readable by host code: itself when on the CPU, else a host copy.
inline Tensor onHost(const Tensor &t) { return t.to(Device::Cpu); }

struct SelectedRows; // executor/selected_rows.h

/// Named tensors a program runs over: dense tensors, and SelectedRows (sparse rows, e.g. an
/// embedding's gradient) beside them. A name holds one or the other: making one kind drops the
/// other. Not thread safe: the caller serialises access.
class Scope {
public:
  Tensor *find(llvm::StringRef name) {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : &it->second;
  }
  const Tensor *find(llvm::StringRef name) const {
    auto it = vars_.find(name);
    return it == vars_.end() ? nullptr : &it->second;
  }
  /// The tensor named `name`, created empty when missing.
  Tensor &get(llvm::StringRef name) {
    if (!rows_.empty())
      rows_.erase(name);
    return vars_[name];
  }
  void erase(llvm::StringRef name) {
    vars_.erase(name);
    rows_.erase(name);
  }
  /// The SelectedRows named `name`, or nullptr (defined in selected_rows.cc).
  SelectedRows *findRows(llvm::StringRef name);
  const SelectedRows *findRows(llvm::StringRef name) const;
  /// The SelectedRows named `name`, created empty when missing.
  SelectedRows &getRows(llvm::StringRef name);

private:
  llvm::StringMap<Tensor> vars_;
  // shared_ptr: SelectedRows is incomplete here.
  llvm::StringMap<std::shared_ptr<SelectedRows>> rows_;
};

} // namespace oar
