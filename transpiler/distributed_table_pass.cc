// Lookups of distributed tables become pulls and pushes of the rows a batch touches.
#include "transpiler/distributed_table_pass.h"

#include "transpiler/passes.h"

#include <map>

#include "ops/op_registry.h"
#include "ops/table_limits.h"
#include "support/error.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

bool isDistributedLookup(const proto::Op &op) {
  const proto::Attr *d = findAttr(op, "is_distributed");
  return op.type() == "lookup_table" && d && d->b();
}

bool hasDistributedTables(const proto::Program &main) {
  for (const proto::Op &op : main.blocks(0).ops())
    if (isDistributedLookup(op))
      return true;
  return false;
}

namespace {

int64_t paddingIdx(const proto::Op &op) {
  const proto::Attr *a = findAttr(op, "padding_idx");
  return a ? a->i() : -1;
}

/// The op of the trainer that pulls (or pushes) table `t`'s rows in place of `op`.
proto::Op tableOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                  const TablePlan &t, const proto::Op &op, const DistributeConfig &config) {
  return makeOp(type, inputs, outputs,
                {{"table", t.table},
                 {"width", t.width},
                 {"height", t.height},
                 {"endpoints", config.pservers},
                 {"num_shards", config.tableShards},
                 {"padding_idx", paddingIdx(op)}},
                op.role());
}

} // namespace

llvm::Expected<std::vector<TablePlan>> distributeTables(proto::Program &main,
                                                        const proto::Program &startup,
                                                        const DistributeConfig &config) {
  proto::Block &block = *main.mutable_blocks(0);
  std::map<std::string, TablePlan> tables; // by name: deterministic order
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    if (!isDistributedLookup(op))
      continue;
    auto table = firstInputs(op, i, {"W"});
    if (!table)
      return table.takeError();
    std::string w = std::move((*table)[0]);
    if (tables.count(w))
      continue;
    const proto::Var *v = findVar(block, w);
    if (!v || v->type().dims_size() != 2 || v->type().dtype() != proto::F32)
      return makeError("{0}: a distributed table must be a declared f32 [rows, width] var", w);
    if (config.mode == Mode::Geo)
      return makeError("{0}: distributed tables train in sync or async mode, not geo", w);
    TablePlan t;
    t.table = w;
    t.height = v->type().dims(0);
    t.width = v->type().dims(1);
    ops::AttrReader attrs(op, *ops::lookupOp("lookup_table")); // unset: the schema's defaults
    t.admitAfter = attrs.getInt("admit_after");
    t.admitProbability = attrs.getFloat("admit_probability");
    t.evictAfter = attrs.getInt("evict_after");
    for (const proto::Op &init : startup.blocks(0).ops())
      if (llvm::is_contained(allOutputNames(init), w))
        t.initializer = init;
    tables.emplace(w, std::move(t));
  }
  if (tables.empty())
    return std::vector<TablePlan>{};

  // Rewrite in place; `grads` collects what the pushes replaced (the table's grad and its
  // renamed partial copies), which nothing may read but their sum and the optimizer.
  llvm::StringMap<std::string> grads; // grad var -> table
  google::protobuf::RepeatedPtrField<proto::Op> kept;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    auto tableRead = [&](llvm::StringRef slot) -> TablePlan * {
      for (const std::string &n : opInputs(op, slot))
        if (auto it = tables.find(n); it != tables.end())
          return &it->second;
      return nullptr;
    };
    if (op.type() == "lookup_table" && tableRead("W")) {
      TablePlan &t = *tableRead("W");
      if (!isDistributedLookup(op))
        return makeError("op #{0} (lookup_table) reads {1} without is_distributed, but another "
                         "lookup makes it a distributed table",
                         i, t.table);
      *kept.Add() = tableOp("distributed_lookup_table", {{"Ids", opInputs(op, "Ids")}},
                            {{"Out", opOutputs(op, "Out")}}, t, op, config);
      continue;
    }
    if (op.type() == "lookup_table_grad" && tableRead("W")) {
      TablePlan &t = *tableRead("W");
      for (const std::string &g : opOutputs(op, "W@GRAD"))
        grads[g] = t.table;
      *kept.Add() = tableOp("distributed_push_sparse",
                            {{"Ids", opInputs(op, "Ids")}, {"Out@GRAD", opInputs(op, "Out@GRAD")}},
                            {}, t, op, config);
      continue;
    }
    // What reads a table's gradient: the sum of its partial copies (dropped: the pservers sum
    // the pushes) and the optimizer (it becomes the table's).
    std::string gradOf;
    for (const std::string &n : allInputNames(op))
      if (auto it = grads.find(n); it != grads.end())
        gradOf = it->second;
    if (!gradOf.empty() && op.type() == "sum") {
      for (const std::string &out : allOutputNames(op))
        grads[out] = gradOf;
      continue;
    }
    if (!gradOf.empty() && op.role() == proto::OPTIMIZE &&
        opInputs(op, "Param") == std::vector<std::string>{gradOf}) {
      TablePlan &t = tables[gradOf];
      if (llvm::Error err = ops::checkSparseOptimizer(op.type()))
        return makeError("{0}: {1}", t.table, llvm::toString(std::move(err)));
      if (!opInputs(op, "Step").empty())
        return makeError("op #{0} ({1}) updates distributed table {2} on a learning-rate schedule "
                         "or warm-up; a pserver's table keeps a constant rate (schedule the "
                         "dense params only, or make the table local)",
                         i, op.type(), t.table);
      auto gradAndRate = firstInputs(op, i, {"Grad", "LearningRate"});
      if (!gradAndRate)
        return gradAndRate.takeError();
      std::string &grad = (*gradAndRate)[0], &learningRate = (*gradAndRate)[1];
      if (!findVar(block, learningRate))
        return undeclaredInput(op, i, "LearningRate", learningRate);
      t.grad = std::move(grad);
      t.optimizer = op;
      t.learningRate = std::move(learningRate);
      continue;
    }
    if (!gradOf.empty())
      return makeError("op #{0} ({1}) reads the gradient of distributed table {2}; only the "
                       "table's optimizer may (it runs on the pservers)",
                       i, op.type(), gradOf);
    for (const std::string &n : allInputNames(op))
      if (tables.count(n))
        return makeError("op #{0} ({1}) reads distributed table {2}, which never exists whole on "
                         "a trainer; only lookup_table with is_distributed may read it",
                         i, op.type(), n);
    *kept.Add() = op;
  }
  for (auto &[name, t] : tables)
    if (t.optimizer.type().empty())
      return makeError("distributed table {0} has no optimizer op; build the model with an "
                       "optimizer's minimize()",
                       name);
  block.mutable_ops()->Swap(&kept);
  std::vector<TablePlan> out;
  for (auto &[name, t] : tables)
    out.push_back(std::move(t));
  return out;
}

llvm::Error distributedTablePass(TranspileState &state) {
  if (state.config.mode == Mode::Collective || !hasDistributedTables(state.main))
    return llvm::Error::success();
  state.rewritten = state.main;
  auto tables = distributeTables(*state.rewritten, state.startup, state.config);
  if (!tables)
    return tables.takeError();
  state.tables = std::move(*tables);
  return llvm::Error::success();
}

} // namespace oar
