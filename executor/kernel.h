// CPU/CUDA kernels registered by (op type, device, dtype), and what a kernel sees when it runs.
#pragma once

#include <string>

#include "executor/selected_rows.h"
#include "executor/tensor.h"
#include "ops/op_registry.h"

namespace oar {

/// What the ops of a distributed job reach beyond their inputs (the trainer's client, the
/// pserver's loop, the collective group): a node's runtime derives its environment from this
/// (runtime/node/run_env.h). A program on one machine runs without one.
class KernelEnv {
public:
  virtual ~KernelEnv() = default;
};

/// A running op's view of its inputs, outputs and attrs. Outputs are already sized by shape
/// inference when the kernel is called.
class KernelContext {
public:
  KernelContext(const proto::Op &op, const ops::OpSchema &schema, Scope &scope,
                KernelEnv *env = nullptr)
      : op_(op), attrs_(op, schema), scope_(scope), env_(env) {}
  const proto::Op &op() const { return op_; }
  const ops::AttrReader &attrs() const { return attrs_; }
  bool hasInput(llvm::StringRef slot, size_t i = 0) const;
  size_t inputCount(llvm::StringRef slot) const;
  const Tensor &input(llvm::StringRef slot, size_t i = 0) const;
  /// False when the slot is absent or the entry is kEmptyVarName (an unwanted gradient).
  bool hasOutput(llvm::StringRef slot, size_t i = 0) const;
  size_t outputCount(llvm::StringRef slot) const;
  Tensor &output(llvm::StringRef slot, size_t i = 0);
  /// Whether the input is a SelectedRows (only in slots declared kSelectedRows; the executor
  /// refuses it elsewhere). Read it with inputRows(); input() is for dense tensors.
  bool inputIsRows(llvm::StringRef slot, size_t i = 0) const;
  const SelectedRows &inputRows(llvm::StringRef slot, size_t i = 0) const;
  /// An output that shape inference made a SelectedRows: its height is set, the kernel fills
  /// rows and values.
  SelectedRows &outputRows(llvm::StringRef slot, size_t i = 0);
  /// "Grad (emb.w_0@GRAD)", for errors about one var (the executor adds the op).
  std::string describeInput(llvm::StringRef slot, size_t i = 0) const;
  Scope &scope() { return scope_; }
  /// The executor's environment for distributed ops (nullptr on a single machine).
  KernelEnv *env() const { return env_; }

private:
  const proto::Op &op_;
  ops::AttrReader attrs_;
  Scope &scope_;
  KernelEnv *env_;
};

using KernelFn = llvm::Error (*)(KernelContext &);

/// Registers a kernel at static-initialisation time.
bool registerKernel(llvm::StringRef op, Device device, DType dtype, KernelFn fn);
/// The kernel for (op, device, dtype); the error lists each candidate and why it declined.
llvm::Expected<KernelFn> lookupKernel(llvm::StringRef op, Device device, DType dtype);
/// Whether any kernel exists for `op` on `device`.
bool hasKernel(llvm::StringRef op, Device device);
/// Whether the kernel for (op, device, dtype) exists.
bool hasKernel(llvm::StringRef op, Device device, DType dtype);

} // namespace oar

#define OAR_KERNEL_CONCAT2(a, b, c) a##b##c
#define OAR_KERNEL_CONCAT(a, b, c) OAR_KERNEL_CONCAT2(a, b, c)
/// `OAR_KERNEL(scale, Device::Cpu, proto::F32, scaleCpu<float>);`
#define OAR_KERNEL(op, device, dtype, fn)                                                          \
  [[maybe_unused]] static bool OAR_KERNEL_CONCAT(oarKernel_, op, __COUNTER__) =                    \
      ::oar::registerKernel(#op, device, dtype, fn)
