// The kernel registry and KernelContext.
#include "executor/kernel.h"

#include <map>
#include <tuple>

#include "ir/names.h"

namespace oar {

namespace {
using Key = std::tuple<std::string, Device, DType>;
std::map<Key, KernelFn> &kernels() {
  static std::map<Key, KernelFn> k;
  return k;
}
} // namespace

bool registerKernel(llvm::StringRef op, Device device, DType dtype, KernelFn fn) {
  kernels()[{op.str(), device, dtype}] = fn;
  return true;
}

llvm::Expected<KernelFn> lookupKernel(llvm::StringRef op, Device device, DType dtype) {
  auto it = kernels().find({op.str(), device, dtype});
  if (it != kernels().end())
    return it->second;
  std::string why;
  for (const auto &[key, fn] : kernels()) {
    if (std::get<0>(key) != op)
      continue;
    why += llvm::formatv("; {0}/{1} declined: ", deviceName(std::get<1>(key)),
                         dtypeName(std::get<2>(key)))
               .str();
    why += std::get<1>(key) != device ? "other device" : "other dtype";
  }
  if (why.empty())
    why = "; no kernel is registered for this op";
  return makeError("no {0} kernel for op {1} with dtype {2}{3}", deviceName(device), op,
                   dtypeName(dtype), why);
}

bool hasKernel(llvm::StringRef op, Device device) {
  for (const auto &[key, fn] : kernels())
    if (std::get<0>(key) == op && std::get<1>(key) == device)
      return true;
  return false;
}

bool hasKernel(llvm::StringRef op, Device device, DType dtype) {
  return kernels().count({op.str(), device, dtype}) != 0;
}

size_t KernelContext::inputCount(llvm::StringRef slot) const {
  const proto::Slot *s = findInputSlot(op_, slot);
  return s ? s->names_size() : 0;
}

size_t KernelContext::outputCount(llvm::StringRef slot) const {
  const proto::Slot *s = findOutputSlot(op_, slot);
  return s ? s->names_size() : 0;
}

bool KernelContext::hasInput(llvm::StringRef slot, size_t i) const {
  return slotName(findInputSlot(op_, slot), i) != nullptr;
}

const Tensor &KernelContext::input(llvm::StringRef slot, size_t i) const {
  const std::string *name = slotName(findInputSlot(op_, slot), i);
  assert(name && "input index out of range");
  const Tensor *t = scope_.find(*name);
  assert(t && "the executor checks inputs exist before running a kernel");
  return *t;
}

bool KernelContext::inputIsRows(llvm::StringRef slot, size_t i) const {
  const std::string *name = slotName(findInputSlot(op_, slot), i);
  return name && !scope_.find(*name) && scope_.findRows(*name);
}

const SelectedRows &KernelContext::inputRows(llvm::StringRef slot, size_t i) const {
  const std::string *name = slotName(findInputSlot(op_, slot), i);
  assert(name && "input index out of range");
  const SelectedRows *sr = scope_.findRows(*name);
  assert(sr && "inputRows() of an input that is not a SelectedRows");
  return *sr;
}

SelectedRows &KernelContext::outputRows(llvm::StringRef slot, size_t i) {
  const std::string *name = slotName(findOutputSlot(op_, slot), i);
  assert(name && "output not wanted");
  return scope_.getRows(*name);
}

std::string KernelContext::describeInput(llvm::StringRef slot, size_t i) const {
  const std::string *name = slotName(findInputSlot(op_, slot), i);
  return llvm::formatv("{0} ({1})", slot, name ? *name : "?").str();
}

bool KernelContext::hasOutput(llvm::StringRef slot, size_t i) const {
  return slotName(findOutputSlot(op_, slot), i) != nullptr;
}

Tensor &KernelContext::output(llvm::StringRef slot, size_t i) {
  const std::string *name = slotName(findOutputSlot(op_, slot), i);
  assert(name && "output not wanted");
  return scope_.get(*name);
}

} // namespace oar
