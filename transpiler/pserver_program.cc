// The pserver side of the DistributeTranspiler.
#include "checkpoint/row_init.h"
#include "ir/names.h"
#include "ops/op_registry.h"
#include "support/error.h"
#include "transpiler/op_writer.h"
#include "transpiler/transpiler.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace oar {

namespace {

/// The name a var of a param's optimizer takes for one block.
std::string stateBlockName(const ParamPlan &p, const VarBlock &b, llvm::StringRef var) {
  return p.split() ? blockName(var, b.index) : var.str();
}

/// Old name -> new name for the few names of one op, where a linear search beats building a
/// map. The last entry for a name wins.
using Renames = llvm::SmallVector<std::pair<llvm::StringRef, std::string>, 8>;

/// `name` renamed through `names` (itself when not in it).
const std::string &renamed(const std::string &name, const Renames &names) {
  auto lastFirst = llvm::reverse(names);
  auto rename = llvm::find_if(lastFirst, [&](const auto &r) { return r.first == name; });
  return rename != lastFirst.end() ? rename->second : name;
}

/// Appends to `block` a copy of `src` whose input and output names are renamed through `names`.
/// The same message as copying `src` and then renaming, but each name is written once: the
/// optimizer's op and the per-block state initialisers are copied once per param block, and
/// copying their names only to replace them was a large share of building a pserver's programs.
proto::Op &appendRenamed(proto::Block &block, const proto::Op &src, const Renames &names) {
  proto::Op &op = *block.add_ops();
  op.set_type(src.type());
  auto copySlots = [&](const google::protobuf::RepeatedPtrField<proto::Slot> &from,
                       google::protobuf::RepeatedPtrField<proto::Slot> &to) {
    to.Reserve(from.size());
    for (const proto::Slot &s : from) {
      proto::Slot &copy = *to.Add();
      copy.set_slot(s.slot());
      copy.mutable_names()->Reserve(s.names_size());
      for (const std::string &n : s.names())
        copy.add_names(renamed(n, names));
    }
  };
  copySlots(src.inputs(), *op.mutable_inputs());
  copySlots(src.outputs(), *op.mutable_outputs());
  *op.mutable_attrs() = src.attrs();
  op.set_role(src.role());
  // A copy keeps fields this build does not know (none in programs oar writes).
  const google::protobuf::Reflection &reflection = *proto::Op::GetReflection();
  if (const auto &unknown = reflection.GetUnknownFields(src); !unknown.empty())
    reflection.MutableUnknownFields(&op)->MergeFrom(unknown);
  return op;
}

/// Whether initialiser `init` writes one value everywhere (fill_constant of the var's `dims`),
/// so that a slice of what it writes is the same op with the slice's shape. The moments of Adam
/// and most biases start so: a pserver then builds only its blocks of them, not the whole var.
/// Any other shape keeps the whole fill and split, which refuses it as the single machine would.
bool fillsConstant(const proto::Op &init, llvm::ArrayRef<int64_t> dims) {
  const proto::Attr *shape = findAttr(init, "shape");
  return init.type() == "fill_constant" && shape &&
         llvm::ArrayRef<int64_t>(shape->ints().v().data(), shape->ints().v().size()) == dims;
}

/// Appends a copy of constant fill `init` of `var` that fills `name` with shape `dims`.
void appendConstantFill(proto::Block &block, const proto::Op &init, llvm::StringRef var,
                        std::string name, llvm::ArrayRef<int64_t> dims) {
  proto::Op &op = appendRenamed(block, init, {{var, std::move(name)}});
  for (proto::Attr &a : *op.mutable_attrs())
    if (a.name() == "shape")
      a.mutable_ints()->mutable_v()->Assign(dims.begin(), dims.end());
}

/// Declares a persistable var of the param's dtype (optimizer state shares it).
proto::Var &declareState(VarTable &vars, const ParamPlan &p, llvm::StringRef name,
                         llvm::ArrayRef<int64_t> dims) {
  proto::Var &out = vars.declare(name, p.dtype, dims);
  out.set_persistable(true);
  return out;
}

/// Dims of a var of the single-machine program by name (it is declared: the plan read it).
llvm::ArrayRef<int64_t> srcDims(const TranspileInputs &in, llvm::StringRef n) {
  return dimsOf(in.mainVars.lookup(n)->type());
}

/// The optimizer op of `p`, on block `b`'s slices of the param and its state.
void appendUpdate(const TranspileInputs &in, const ParamPlan &p, const VarBlock &b,
                  proto::Block &sub, VarTable &vars) {
  Renames names{{p.param, b.name}, {p.grad, b.gradName}};
  for (const auto &[slot, var] : p.optimizer.paramShaped) {
    names.emplace_back(var, stateBlockName(p, b, var));
    declareState(vars, p, names.back().second, b.dims);
  }
  for (const auto &[slot, var] : p.optimizer.perParam) {
    names.emplace_back(var, stateBlockName(p, b, var));
    declareState(vars, p, names.back().second, {1});
  }
  for (const auto &[slot, var] : p.optimizer.shared)
    if (!vars.find(var))
      declareState(vars, p, var, srcDims(in, var));
  appendRenamed(sub, in.main.blocks(0).ops(static_cast<int>(p.optimizer.opIndex)), names)
      .set_role(proto::OPTIMIZE);
}

/// Attr `name` of `op` as its schema reads it (the op's value, or the schema's default), or
/// `fallback` when ops of that type have no such attr (sgd has no epsilon; a table without an
/// initialiser has no op at all).
proto::Attr schemaAttr(const proto::Op &op, llvm::StringRef name, AttrValue fallback) {
  const ops::OpSchema *schema = ops::lookupOp(op.type());
  if (!schema || !schema->findAttr(name))
    return fallback.attr;
  return ops::AttrReader(op, *schema).get(name);
}

/// Where adagrad's Moment starts: the value the startup program fills it with (0 when it is not
/// a constant fill, or the optimizer is not adagrad).
float initialAccumulatorOf(const TranspileInputs &in, const proto::Op &opt) {
  if (opt.type() != "adagrad")
    return 0;
  for (const proto::Slot &slot : opt.inputs())
    if (slot.slot() == "Moment" && slot.names_size() == 1)
      if (auto it = in.startupWriters.find(slot.names(0)); it != in.startupWriters.end())
        if (it->second->type() == "fill_constant")
          return schemaAttr(*it->second, "value", AttrValue(0.0f)).f();
  return 0;
}

/// The sparse_table op declaring table `t`: its optimizer and how a row starts, from the
/// single-machine program's update op and the startup's initialiser of the table.
void appendSparseTable(const TranspileInputs &in, const TablePlan &t, proto::Block &root,
                       VarTable &vars) {
  const proto::Op &opt = t.optimizer;
  RowInit init = rowInitOf(t.initializer, t.table);
  if (!vars.find(t.learningRate))
    vars.declare(t.learningRate, proto::F32, srcDims(in, t.learningRate)).set_persistable(true);
  // Where a single-machine checkpoint of the table keeps its rows' state: the update op's
  // inputs other than the param, its gradient and the rate.
  std::vector<std::string> stateVars;
  for (const proto::Slot &slot : opt.inputs())
    if (slot.slot() != "Param" && slot.slot() != "Grad" && slot.slot() != "LearningRate" &&
        slot.names_size() == 1)
      stateVars.push_back(slot.slot() + "=" + slot.names(0));
  // Attrs the optimizer does not have keep sparse_table's defaults.
  const ops::OpSchema &table = *ops::lookupOp("sparse_table");
  auto tableDefault = [&](llvm::StringRef name) {
    return AttrValue(table.findAttr(name)->defaultValue);
  };
  *root.add_ops() = makeOp(
      "sparse_table", {{"LearningRate", {t.learningRate}}}, {},
      {{"table", t.table},
       {"width", t.width},
       {"num_shards", in.plan.config.tableShards},
       {"optimizer", opt.type()},
       {"row_wise", AttrValue(schemaAttr(opt, "row_wise", tableDefault("row_wise")))},
       {"epsilon", AttrValue(schemaAttr(opt, "epsilon", tableDefault("epsilon")))},
       {"initial_accumulator", initialAccumulatorOf(in, opt)},
       {"beta1", AttrValue(schemaAttr(opt, "beta1", tableDefault("beta1")))},
       {"beta2", AttrValue(schemaAttr(opt, "beta2", tableDefault("beta2")))},
       {"weight_decay", AttrValue(schemaAttr(opt, "weight_decay", tableDefault("weight_decay")))},
       {"init", init.kind},
       {"init_a", init.a},
       {"init_b", init.b},
       {"seed", init.seed},
       {"admit_after", t.admitAfter},
       {"admit_probability", t.admitProbability},
       {"evict_after", t.evictAfter},
       {"state_vars", stateVars}},
      proto::DIST);
}

/// The sum over the blocks placed on endpoint `index` of `perBlock` of the block's param: what
/// a builder declares there, known before it starts.
template <typename PerBlock>
size_t blocksHere(const TranspileInputs &in, size_t index, PerBlock perBlock) {
  size_t n = 0;
  for (const TranspileInputs::LocalParam &local : in.paramsOn[index])
    n += local.blocks.size() * perBlock(*local.param);
  return n;
}

} // namespace

void buildPserverProgram(const TranspileInputs &in, size_t index, proto::Program &out) {
  const DistributePlan &plan = in.plan;
  Mode mode = plan.config.mode;
  int64_t trainers = plan.config.trainers;
  out = newProgram();
  proto::Block &root = *out.mutable_blocks(0);
  VarTable vars(root);
  // Per block here: the param's block, its grad and the trainers' copies of it, and its
  // optimizer state.
  vars.reserve(blocksHere(in, index, [&](const ParamPlan &p) {
    return 2 + (mode == Mode::Sync ? static_cast<size_t>(trainers) : 0) +
           p.optimizer.paramShaped.size() + p.optimizer.perParam.size();
  }));
  std::vector<std::string> gradToBlock, paramBlocks, blockParams;
  std::vector<int64_t> optimizeBlocks, blockRowBegin;

  for (const TranspileInputs::LocalParam &local : in.paramsOn[index]) {
    const ParamPlan &p = *local.param;
    for (const VarBlock *slice : local.blocks) {
      const VarBlock &b = *slice;
      declareState(vars, p, b.name, b.dims);
      paramBlocks.push_back(b.name);
      blockParams.push_back(p.param);
      blockRowBegin.push_back(b.begin / p.rowWidth());
      proto::Block &sub = *out.add_blocks();
      sub.set_idx(out.blocks_size() - 1);
      sub.set_parent(0);
      optimizeBlocks.push_back(sub.idx());

      if (mode == Mode::Geo) {
        gradToBlock.push_back(appendGeoDeltaBlock(p, b, sub, vars));
        continue;
      }
      vars.declare(b.gradName, p.dtype, b.dims);
      gradToBlock.push_back(b.gradName + ":" + std::to_string(sub.idx()));
      if (mode == Mode::Sync) { // average the trainers' copies
        OpWriter sum(sub, "sum", proto::OPTIMIZE);
        OpWriter::Names &copies = sum.inputs("X");
        copies.Reserve(static_cast<int>(trainers));
        for (int64_t t = 0; t < trainers; ++t) {
          std::string copy = trainerCopyName(b.gradName, static_cast<unsigned>(t));
          vars.declare(copy, p.dtype, b.dims);
          copies.Add(std::move(copy));
        }
        sum.output("Out", b.gradName);
        OpWriter(sub, "scale", proto::OPTIMIZE)
            .input("X", b.gradName)
            .output("Out", b.gradName)
            .attr("scale", 1.0f / static_cast<float>(trainers));
      }
      appendUpdate(in, p, b, sub, vars);
    }
  }

  for (const TablePlan &t : plan.tables)
    appendSparseTable(in, t, root, vars);
  // Written in place, its name lists moved in: makeOp would copy each of them three times.
  auto moveInto = [](OpWriter::Names &to, std::vector<std::string> &from) {
    to.Reserve(static_cast<int>(from.size()));
    for (std::string &name : from)
      to.Add(std::move(name));
  };
  OpWriter serve(root, "listen_and_serv", proto::DIST); // attrs in name order
  moveInto(serve.strings("block_params"), blockParams);
  serve.attr("block_row_begin", blockRowBegin)
      .attr("endpoint", llvm::StringRef(plan.config.pservers[index]))
      .attr("fanin", trainers);
  moveInto(serve.strings("grad_to_block_id"), gradToBlock);
  serve.attr("mode", modeName(mode)).attr("optimize_blocks", optimizeBlocks);
  moveInto(serve.strings("param_blocks"), paramBlocks);
  serve.attr("plan_digest", llvm::StringRef(in.digests().plan));
  setDistInfo(out, in, Role::Pserver, static_cast<int64_t>(index));
}

llvm::Error buildPserverStartup(const TranspileInputs &in, size_t index, proto::Program &out) {
  const DistributePlan &plan = in.plan;
  out = newProgram();
  proto::Block &block = *out.mutable_blocks(0);
  VarTable vars(block);
  vars.reserve(blocksHere(in, index, [](const ParamPlan &p) {
    return 1 + p.optimizer.paramShaped.size() + p.optimizer.perParam.size();
  }));
  llvm::DenseSet<llvm::StringRef> emitted; // shared state already initialised; views the plan

  auto writerOf = [&](llvm::StringRef var) -> llvm::Expected<const proto::Op *> {
    if (const proto::Op *op = in.startupWriters.lookup(var))
      return op;
    return makeError("the startup program does not initialise {0}", var);
  };
  // Runs var's initialiser whole, then keeps the slices that live here: the same numbers as
  // the single-machine startup gives those slices. A constant fill fills just those slices.
  auto emitSliced = [&](const TranspileInputs::LocalParam &local,
                        llvm::StringRef var) -> llvm::Error {
    const ParamPlan &p = *local.param;
    auto init = writerOf(var);
    if (!init)
      return init.takeError();
    if (!p.split()) {
      declareState(vars, p, var, p.dims);
      *block.add_ops() = **init;
      return llvm::Error::success();
    }
    if (fillsConstant(**init, p.dims)) { // each block here is a fill of its own: no whole var
      for (const VarBlock *b : local.blocks) {
        std::string name = blockName(var, b->index);
        declareState(vars, p, name, b->dims);
        appendConstantFill(block, **init, var, std::move(name), b->dims);
      }
      return llvm::Error::success();
    }
    vars.declare(var, p.dtype, p.dims); // the whole var, dropped after the split
    *block.add_ops() = **init;
    // Every endpoint's startup lists every block here, so the names go into the op in place.
    OpWriter split(block, "split", proto::FORWARD);
    split.input("X", var);
    OpWriter::Names &outs = split.outputs("Out");
    outs.Reserve(static_cast<int>(p.blocks.size()));
    for (const VarBlock &b : p.blocks) {
      if (b.endpointIndex != index) {
        outs.Add(kEmptyVarName.str());
        continue;
      }
      std::string name = blockName(var, b.index);
      declareState(vars, p, name, b.dims);
      outs.Add(std::move(name));
    }
    split.attr("axis", int64_t(0)).attr("sections", p.blockRows());
    return llvm::Error::success();
  };

  for (const TranspileInputs::LocalParam &local : in.paramsOn[index]) {
    const ParamPlan &p = *local.param;
    if (llvm::Error err = emitSliced(local, p.param))
      return err;
    if (plan.config.mode == Mode::Geo)
      continue; // GEO pservers hold params only
    for (const auto &[slot, var] : p.optimizer.paramShaped)
      if (llvm::Error err = emitSliced(local, var))
        return err;
    for (const VarBlock *slice : local.blocks) {
      const VarBlock &b = *slice;
      for (const auto &[slot, var] : p.optimizer.perParam) { // one whole copy per block
        auto init = writerOf(var);
        if (!init)
          return init.takeError();
        std::string name = stateBlockName(p, b, var);
        declareState(vars, p, name, {1});
        appendRenamed(block, **init, {{var, std::move(name)}});
      }
      for (const auto &[slot, var] : p.optimizer.shared)
        if (emitted.insert(var).second) {
          auto init = writerOf(var);
          if (!init)
            return init.takeError();
          declareState(vars, p, var, srcDims(in, var));
          *block.add_ops() = **init;
        }
    }
  }
  for (const TablePlan &t : plan.tables) // every pserver holds rows of every table
    if (emitted.insert(t.learningRate).second) {
      auto init = writerOf(t.learningRate);
      if (!init)
        return init.takeError();
      vars.declare(t.learningRate, proto::F32, srcDims(in, t.learningRate)).set_persistable(true);
      *block.add_ops() = **init;
    }
  setDistInfo(out, in, Role::Pserver, static_cast<int64_t>(index));
  return llvm::Error::success();
}

} // namespace oar
