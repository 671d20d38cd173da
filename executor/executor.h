// Runs a block of a program over a Scope with the registered kernels.
#pragma once

#include <functional>
#include <memory>

#include "executor/kernel.h"

namespace oar {

/// Which ops of a block to run.
using OpFilter = std::function<bool(const proto::Op &)>;

/// Runs programs op by op. Each op's output dims come from its shape inference on the actual
/// input dims, so kernels find their outputs sized; the kernel is the registry's entry for the
/// op's (type, device, dtype). A CUDA executor runs each op that has a CUDA kernel on the GPU
/// and the others on the CPU, copying inputs between them (docs/cuda.md).
class Executor {
public:
  explicit Executor(Device device = Device::Cpu) : device_(device) {}
  /// Runs the ops of block `blockIdx` that pass `filter` (all when empty). Errors name the op.
  llvm::Error run(const proto::Program &prog, Scope &scope, int blockIdx = 0,
                  const OpFilter &filter = {});
  /// Runs one op; `where` names it in errors.
  llvm::Error runOp(const proto::Op &op, Scope &scope, llvm::StringRef where);

  Device device() const { return device_; }

  /// What distributed ops (send, recv, ...) reach through KernelContext::env(); not owned.
  void setEnv(KernelEnv *env) { env_ = env; }

private:
  Device device_;
  KernelEnv *env_ = nullptr;
};

/// The dtype an op's kernel is chosen by: its first declared input's, or its `dtype` attr.
llvm::Expected<DType> kernelDType(const proto::Op &op, const ops::OpSchema &schema,
                                  const Scope &scope);

} // namespace oar
