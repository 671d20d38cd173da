// The executor: shape inference at run time, output allocation, kernel dispatch.
#include "executor/executor.h"

#include <mutex>

#include "executor/threads.h"

#include "ir/names.h"

namespace oar {

llvm::Expected<DType> kernelDType(const proto::Op &op, const ops::OpSchema &schema,
                                  const Scope &scope) {
  for (const ops::SlotDecl &slot : schema.inputs()) {
    auto names = opInputs(op, slot.name);
    if (names.empty())
      continue;
    const Tensor *t = scope.find(names[0]);
    if (t && t->initialized())
      return t->dtype();
    const SelectedRows *sr = t ? nullptr : scope.findRows(names[0]);
    if (sr && sr->initialized())
      return sr->dtype();
  }
  if (schema.findAttr("dtype"))
    return static_cast<DType>(ops::AttrReader(op, schema).getInt("dtype"));
  return proto::F32; // ops without inputs or dtype (e.g. barriers)
}

/// A SelectedRows input is only for slots declared kSelectedRows.
static llvm::Error checkSparseSlot(const ops::OpSchema &schema, llvm::StringRef slot,
                                   llvm::StringRef name) {
  for (const ops::SlotDecl &d : schema.inputs())
    if (d.name == slot && (d.flags & ops::kSelectedRows))
      return llvm::Error::success();
  return makeError("input {0} ({1}) is selected rows but {2} takes only a dense tensor there", slot,
                   name, schema.type());
}

/// Where a var crosses devices (a fed batch or a received param read by a GPU op, a gradient
/// sent from the GPU) the executor copies it: the var then lives on the device that last read it.
static void moveInputsTo(const proto::Op &op, Scope &scope, Device device) {
  for (const proto::Slot &slot : op.inputs())
    for (const std::string &name : slot.names()) {
      if (Tensor *t = scope.find(name); t && t->initialized()) {
        if (t->device() != device)
          *t = t->to(device);
      } else if (SelectedRows *sr = t ? nullptr : scope.findRows(name); sr && sr->initialized()) {
        if (sr->values.device() != device)
          sr->values = sr->values.to(device);
      }
    }
}

llvm::Error Executor::runOp(const proto::Op &op, Scope &scope, llvm::StringRef where) {
  const ops::OpSchema *schema = ops::lookupOp(op.type());
  if (!schema)
    return makeError("{0}: unknown op type \"{1}\"", where, op.type());
  auto dtype = kernelDType(op, *schema, scope);
  if (!dtype)
    return addContext(dtype.takeError(), where);
  if (device_ != Device::Cpu && !deviceMemory(device_))
    return makeError("{0}: the executor runs on {1}, but its kernels are not loaded (usePlace)",
                     where, deviceName(device_));
  // On a GPU executor an op runs on the GPU when it has a kernel there; the rest (send, recv,
  // tables) run on the CPU. Inputs move to the op's device first; only a process that loaded
  // the GPU's kernels can hold tensors there.
  Device device = device_ != Device::Cpu && hasKernel(op.type(), device_, *dtype) ? device_
                                                                                  : Device::Cpu;
  if (deviceMemory(Device::Cuda))
    moveInputsTo(op, scope, device);
  // Every input must hold a value: fed, loaded, or made by an earlier op.
  llvm::SmallVector<std::pair<std::string, ops::VarType>, 8> inputTypes;
  for (const proto::Slot &slot : op.inputs())
    for (const std::string &name : slot.names()) {
      if (name == kEmptyVarName)
        continue;
      ops::VarType type;
      if (const Tensor *t = scope.find(name); t && t->initialized()) {
        type.dtype = t->dtype();
        type.dims.assign(t->dims().begin(), t->dims().end());
      } else if (const SelectedRows *sr = t ? nullptr : scope.findRows(name);
                 sr && sr->initialized()) {
        if (llvm::Error err = checkSparseSlot(*schema, slot.slot(), name))
          return addContext(std::move(err), where);
        type.dtype = sr->dtype();
        type.dims = sr->denseDims();
        type.kind = proto::SELECTED_ROWS;
      } else {
        return makeError("{0}: input {1} ({2}) has no value; is it fed, loaded, or made by the "
                         "startup program?",
                         where, slot.slot(), name);
      }
      inputTypes.emplace_back(name, std::move(type));
    }
  if (schema->infer()) {
    ops::InferContext ictx(op, *schema, [&](llvm::StringRef name) -> const ops::VarType * {
      for (auto &[n, t] : inputTypes)
        if (n == name)
          return &t;
      return nullptr;
    });
    if (llvm::Error err = schema->infer()(ictx))
      return addContext(std::move(err), where);
    for (const auto &[name, type] : ictx.results()) {
      if (!type.isRows()) {
        scope.get(name).resize(type.dtype, type.dims, /*zero=*/true, device);
        continue;
      }
      // The kernel fills rows and values (an input of the same name stays readable till then).
      assert(!type.dims.empty() && "selected rows have a height");
      scope.getRows(name).height = type.dims[0];
    }
  }
  auto kernel = lookupKernel(op.type(), device, *dtype);
  if (!kernel)
    return addContext(kernel.takeError(), where);
  KernelContext kctx(op, *schema, scope, env_);
  return addContext((*kernel)(kctx), where);
}

llvm::Error Executor::run(const proto::Program &prog, Scope &scope, int blockIdx,
                          const OpFilter &filter) {
  // Once a process for OpenMP's threads (oneDNN's GEMMs), and on the calling thread while it
  // runs the block.
  ScopedFlushDenormals flush; // first: it restores the caller's own mode at the end
  static std::once_flag computeThreadsFlush;
  std::call_once(computeThreadsFlush, flushDenormals);
  if (blockIdx < 0 || blockIdx >= prog.blocks_size())
    return makeError("no block {0} to run (the program has {1})", blockIdx, prog.blocks_size());
  const proto::Block &block = prog.blocks(blockIdx);
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    if (filter && !filter(op))
      continue;
    std::string where = llvm::formatv("block {0}, op #{1} ({2})", blockIdx, i, op.type()).str();
    if (llvm::Error err = runOp(op, scope, where))
      return err;
  }
  return llvm::Error::success();
}

} // namespace oar
