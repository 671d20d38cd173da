// The pserver side of the DistributeTranspiler.
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/names.h"
#include "transpiler/transpiler.h"

namespace oar {

namespace {

/// The name a var of a param's optimizer takes for one block.
std::string stateBlockName(const ParamPlan &p, const VarBlock &b, llvm::StringRef var) {
  return p.split() ? blockName(var, b.index) : var.str();
}

/// Renames every input and output name of `op` through `names` (names not in it stay).
void renameAll(proto::Op &op, const std::map<std::string, std::string> &names) {
  for (auto *slots : {op.mutable_inputs(), op.mutable_outputs()})
    for (proto::Slot &s : *slots)
      for (std::string &n : *s.mutable_names())
        if (auto it = names.find(n); it != names.end())
          n = it->second;
}

/// Declares a persistable var of the param's dtype (optimizer state shares it).
proto::Var &declareState(VarTable &vars, const ParamPlan &p, llvm::StringRef name,
                         llvm::ArrayRef<int64_t> dims) {
  proto::Var &out = vars.declare(name, p.dtype, dims);
  out.set_persistable(true);
  return out;
}

/// Dims of a var of the single-machine program by name (it is declared: the plan read it).
llvm::ArrayRef<int64_t> srcDims(const llvm::StringMap<const proto::Var *> &src, llvm::StringRef n) {
  return dimsOf(src.lookup(n)->type());
}

llvm::StringMap<const proto::Var *> indexVars(const proto::Block &block) {
  llvm::StringMap<const proto::Var *> index;
  for (const proto::Var &v : block.vars())
    index[v.name()] = &v;
  return index;
}

} // namespace

proto::Program buildPserverProgram(const proto::Program &main, const DistributePlan &plan,
                                   size_t index) {
  const proto::Block &src = main.blocks(0);
  auto srcVars = indexVars(src);
  const std::string &mode = plan.config.mode;
  int64_t trainers = plan.config.trainers;
  proto::Program out = newProgram();
  proto::Block &root = *out.mutable_blocks(0);
  VarTable vars(root);
  std::vector<std::string> gradToBlock, paramBlocks, blockParams;
  std::vector<int64_t> optimizeBlocks, blockRowBegin;

  for (const ParamPlan &p : plan.params)
    for (const VarBlock &b : p.blocks) {
      if (b.endpointIndex != index)
        continue;
      declareState(vars, p, b.name, b.dims);
      paramBlocks.push_back(b.name);
      blockParams.push_back(p.param);
      blockRowBegin.push_back(b.begin / p.rowWidth());
      proto::Block &sub = *out.add_blocks();
      sub.set_idx(out.blocks_size() - 1);
      sub.set_parent(0);
      optimizeBlocks.push_back(sub.idx());
      auto addOp = [&](proto::Op op) {
        op.set_role(proto::OPTIMIZE);
        *sub.add_ops() = std::move(op);
      };

      if (mode == "geo") { // trainers send (param - synced)/trainers; add it in
        std::string delta = deltaName(b.name);
        vars.declare(delta, p.dtype, b.dims);
        gradToBlock.push_back(delta + ":" + std::to_string(sub.idx()));
        addOp(makeOp("elementwise_add", {{"X", {b.name}}, {"Y", {delta}}}, {{"Out", {b.name}}}));
        continue;
      }
      vars.declare(b.gradName, p.dtype, b.dims);
      gradToBlock.push_back(b.gradName + ":" + std::to_string(sub.idx()));
      if (mode == "sync") { // average the trainers' copies
        std::vector<std::string> copies;
        for (int64_t t = 0; t < trainers; ++t) {
          copies.push_back(trainerCopyName(b.gradName, static_cast<unsigned>(t)));
          vars.declare(copies.back(), p.dtype, b.dims);
        }
        addOp(makeOp("sum", {{"X", copies}}, {{"Out", {b.gradName}}}));
        addOp(makeOp("scale", {{"X", {b.gradName}}}, {{"Out", {b.gradName}}},
                     {{"scale", 1.0f / static_cast<float>(trainers)}}));
      }
      // The optimizer op, on this block's slices of the param and its state.
      std::map<std::string, std::string> names{{p.param, b.name}, {p.grad, b.gradName}};
      for (const auto &[slot, var] : p.optimizer.paramShaped) {
        names[var] = stateBlockName(p, b, var);
        declareState(vars, p, names[var], b.dims);
      }
      for (const auto &[slot, var] : p.optimizer.perParam) {
        names[var] = stateBlockName(p, b, var);
        declareState(vars, p, names[var], {1});
      }
      for (const auto &[slot, var] : p.optimizer.shared)
        if (!vars.find(var))
          declareState(vars, p, var, srcDims(srcVars, var));
      proto::Op update = src.ops(static_cast<int>(p.optimizer.opIndex));
      renameAll(update, names);
      addOp(std::move(update));
    }

  *root.add_ops() = makeOp("listen_and_serv", {}, {},
                           {{"endpoint", plan.config.pservers[index]},
                            {"fanin", trainers},
                            {"mode", mode},
                            {"grad_to_block_id", gradToBlock},
                            {"param_blocks", paramBlocks},
                            {"block_params", blockParams},
                            {"block_row_begin", blockRowBegin},
                            {"optimize_blocks", optimizeBlocks},
                            {"plan_digest", plan.digest()}},
                           proto::DIST);
  setDistInfo(out, plan, "pserver", static_cast<int64_t>(index));
  return out;
}

llvm::Expected<proto::Program> buildPserverStartup(const proto::Program &startup,
                                                   const proto::Program &main,
                                                   const DistributePlan &plan, size_t index) {
  const proto::Block &src = startup.blocks(0);
  auto mainVars = indexVars(main.blocks(0));
  proto::Program out = newProgram();
  proto::Block &block = *out.mutable_blocks(0);
  VarTable vars(block);
  std::set<std::string> emitted;
  llvm::StringMap<const proto::Op *> writers;
  for (const proto::Op &op : src.ops())
    for (const proto::Slot &slot : op.outputs())
      for (const std::string &n : slot.names())
        writers.try_emplace(n, &op);

  auto writerOf = [&](llvm::StringRef var) -> llvm::Expected<proto::Op> {
    if (const proto::Op *op = writers.lookup(var))
      return *op;
    return makeError("the startup program does not initialise {0}", var);
  };
  // Runs var's initialiser whole, then keeps the slices that live here: the same numbers as
  // the single-machine startup gives those slices.
  auto emitSliced = [&](const ParamPlan &p, llvm::StringRef var) -> llvm::Error {
    if (llvm::none_of(p.blocks, [&](const VarBlock &b) { return b.endpointIndex == index; }))
      return llvm::Error::success();
    auto init = writerOf(var);
    if (!init)
      return init.takeError();
    if (!p.split()) {
      declareState(vars, p, var, p.dims);
      *block.add_ops() = *init;
      return llvm::Error::success();
    }
    vars.declare(var, p.dtype, p.dims); // the whole var, dropped after the split
    *block.add_ops() = *init;
    std::vector<std::string> outs;
    std::vector<int64_t> rows;
    for (const VarBlock &b : p.blocks) {
      bool mine = b.endpointIndex == index;
      outs.push_back(mine ? blockName(var, b.index) : kEmptyVarName.str());
      rows.push_back(b.dims[0]);
      if (mine)
        declareState(vars, p, blockName(var, b.index), b.dims);
    }
    *block.add_ops() = makeOp("split", {{"X", {var.str()}}}, {{"Out", outs}},
                              {{"axis", int64_t(0)}, {"sections", rows}});
    return llvm::Error::success();
  };

  for (const ParamPlan &p : plan.params) {
    if (llvm::none_of(p.blocks, [&](const VarBlock &b) { return b.endpointIndex == index; }))
      continue; // nothing of this param lives here
    if (llvm::Error err = emitSliced(p, p.param))
      return err;
    if (plan.config.mode == "geo")
      continue; // GEO pservers hold params only
    for (const auto &[slot, var] : p.optimizer.paramShaped)
      if (llvm::Error err = emitSliced(p, var))
        return err;
    for (const VarBlock &b : p.blocks) {
      if (b.endpointIndex != index)
        continue;
      for (const auto &[slot, var] : p.optimizer.perParam) { // one whole copy per block
        auto init = writerOf(var);
        if (!init)
          return init.takeError();
        std::string name = stateBlockName(p, b, var);
        renameAll(*init, {{var, name}});
        declareState(vars, p, name, {1});
        *block.add_ops() = *init;
      }
      for (const auto &[slot, var] : p.optimizer.shared)
        if (emitted.insert(var).second) {
          auto init = writerOf(var);
          if (!init)
            return init.takeError();
          declareState(vars, p, var, srcDims(mainVars, var));
          *block.add_ops() = *init;
        }
    }
  }
  setDistInfo(out, plan, "pserver", static_cast<int64_t>(index));
  return out;
}

} // namespace oar
