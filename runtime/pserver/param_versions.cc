// Async and GEO pservers: updates beside versions being read write fresh buffers.
#include "runtime/pserver/param_versions.h"

#include "executor/selected_rows.h"
#include "ir/names.h"
#include "ir/program.h"
#include "ops/op_registry.h"

namespace oar::runtime {

/// The slots through which `op` reads and writes a param, when its dense kernel writes every
/// element of the output from the input (and so may write into another buffer); else nullptr.
static const std::pair<llvm::StringRef, llvm::StringRef> *wholeWriteSlots(const proto::Op &op) {
  static const std::pair<llvm::StringRef, llvm::StringRef> optimizer{"Param", "ParamOut"},
      add{"X", "Out"};
  llvm::StringRef type = op.type();
  if (type == "sgd" || type == "momentum" || type == "adam" || type == "adamw")
    return &optimizer;
  if (type == "adagrad") { // its row-wise form updates the rows of a gradient only
    const ops::OpSchema *schema = ops::lookupOp(type);
    return schema && !ops::AttrReader(op, *schema).getBool("row_wise") ? &optimizer : nullptr;
  }
  if (type == "elementwise_add") // GEO: param += the trainer's delta
    return &add;
  return nullptr;
}

/// Whether `slot` holds `var` alone.
static bool holdsAlone(const proto::Slot *slot, llvm::StringRef var) {
  return slot && slot->names_size() == 1 && slot->names(0) == var;
}

void ParamVersions::init(const proto::Program &program, const std::set<std::string> &params,
                         Scope &scope) {
  blocks_.assign(program.blocks_size(), {});
  outOfPlace_ = program;
  for (int b = 1; b < program.blocks_size(); ++b) {
    BlockPlan &plan = blocks_[b];
    const proto::Block &block = program.blocks(b);
    plan.outOfPlace = true;
    for (const proto::Op &op : block.ops())
      for (const std::string &name : allOutputNames(op))
        if (params.count(name) && !llvm::is_contained(plan.params, name))
          plan.params.push_back(name);
    for (const std::string &param : plan.params) {
      scope.get(previousVersionName(param));
      // Reads up to the first write see the current version, under its new name.
      for (int i = 0; i < block.ops_size(); ++i) {
        const proto::Op &op = block.ops(i);
        proto::Op &rewritten = *outOfPlace_.mutable_blocks(b)->mutable_ops(i);
        for (proto::Slot &s : *rewritten.mutable_inputs())
          for (std::string &name : *s.mutable_names())
            if (name == param)
              name = previousVersionName(param);
        if (!llvm::is_contained(allOutputNames(op), param))
          continue;
        const auto *slots = wholeWriteSlots(op);
        plan.outOfPlace &= slots && holdsAlone(findInputSlot(op, slots->first), param) &&
                           holdsAlone(findOutputSlot(op, slots->second), param);
        llvm::append_range(plan.writerInputs, allInputNames(op));
        break;
      }
    }
  }
}

bool ParamVersions::sharedVersion(const BlockPlan &plan, Scope &scope) const {
  for (const std::string &param : plan.params)
    if (const Tensor *t = scope.find(param); t && t->initialized() && !t->ownsBufferAlone())
      return true;
  return false;
}

bool ParamVersions::denseInputs(const BlockPlan &plan, Scope &scope) const {
  for (const std::string &name : plan.writerInputs)
    if (scope.findRows(name))
      return false;
  return true;
}

llvm::Error ParamVersions::apply(Executor &exec, const proto::Program &program, int block,
                                 Scope &scope) {
  const BlockPlan &plan = blocks_[block];
  if (!sharedVersion(plan, scope))
    return exec.run(program, scope, block);
  if (!plan.outOfPlace || !denseInputs(plan, scope)) {
    for (const std::string &param : plan.params)
      if (Tensor &current = *scope.find(param); !current.ownsBufferAlone())
        current = current.clone();
    ++copied_;
    return exec.run(program, scope, block);
  }
  for (const std::string &param : plan.params) {
    Tensor &current = *scope.find(param);
    *scope.find(previousVersionName(param)) = current;
    Tensor next;
    next.resize(current.dtype(), current.dims(), /*zero=*/false, current.device());
    current = std::move(next);
  }
  llvm::Error err = exec.run(outOfPlace_, scope, block);
  for (const std::string &param : plan.params) {
    Tensor &previous = *scope.find(previousVersionName(param));
    if (err) // a half-written version is no version: the param stays as it was
      *scope.find(param) = previous;
    previous = Tensor();
  }
  ++fresh_;
  return err;
}

} // namespace oar::runtime
