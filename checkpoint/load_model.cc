// Loading a checkpoint into a single-machine program.
#include "checkpoint/load_model.h"

#include <algorithm>
#include <cstring>

#include "checkpoint/table_rows.h"
#include "ops/op_registry.h"
#include "support/error.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

std::string LoadReport::summary(const CheckpointReader &ckpt, bool training) const {
  std::string line = llvm::formatv("loaded {0} vars", loaded.size()).str();
  if (tableRows > 0)
    line += llvm::formatv(" and {0} table rows", tableRows).str();
  line += " from " + ckpt.describe();
  if (training && stateFound.empty() && !stateMissing.empty())
    line += llvm::formatv("; it holds no optimizer state, so the optimizer starts fresh ({0} "
                          "vars from the startup program)",
                          stateMissing.size())
                .str();
  return line;
}

std::map<std::string, StateVar> optimizerStateVars(const proto::Block &block) {
  std::map<std::string, StateVar> out;
  for (const proto::Op &op : block.ops()) {
    if (op.role() != proto::OPTIMIZE)
      continue;
    const std::string *param = slotName(findInputSlot(op, "Param"));
    if (!param)
      continue;
    for (const proto::Slot &slot : op.inputs())
      if (slot.slot() != "Param" && slot.slot() != "Grad" && slot.slot() != "LearningRate")
        for (const std::string &name : slot.names())
          out[name] = {op.type(), slot.slot(), *param};
  }
  return out;
}

/// The update op of `param` in `block`, or nullptr.
static const proto::Op *updateOf(const proto::Block &block, llvm::StringRef param) {
  for (const proto::Op &op : block.ops())
    if (op.role() == proto::OPTIMIZE)
      if (const std::string *p = slotName(findInputSlot(op, "Param")); p && *p == param)
        return &op;
  return nullptr;
}

TableInfo wantedTable(const proto::Program &main, const proto::Program &startup,
                      llvm::StringRef table) {
  TableInfo t;
  t.name = table.str();
  if (const proto::Var *v = findVar(main.blocks(0), table); v && v->type().dims_size() == 2)
    t.width = v->type().dims(1);
  if (const proto::Op *op = updateOf(main.blocks(0), table)) {
    if (op->type() == "sgd" || op->type() == "adagrad" || op->type() == "adam")
      t.optimizer = op->type();
    if (const ops::OpSchema *schema = ops::lookupOp(op->type());
        schema && schema->findAttr("row_wise"))
      t.rowWise = ops::AttrReader(*op, *schema).getBool("row_wise");
  }
  const proto::Op *init = initializerOf(startup, table);
  t.init = rowInitOf(init ? *init : proto::Op(), table);
  return t;
}

/// The optimizer's state vars of `param`, by slot.
static std::map<std::string, std::string> stateVarsOf(const std::map<std::string, StateVar> &state,
                                                      llvm::StringRef param) {
  std::map<std::string, std::string> bySlot;
  for (const auto &[name, s] : state)
    if (s.param == param)
      bySlot[s.slot] = name;
  return bySlot;
}

/// Fills dense var `table` (and its optimizer's state vars) from the checkpoint's table of that
/// name: every row starts as a table row does, then the saved rows go in. False when the
/// checkpoint holds no such table.
static llvm::Expected<bool> denseFromTable(const proto::Program &main,
                                           const proto::Program &startup, Scope &scope,
                                           const CheckpointReader &ckpt, const proto::Var &var,
                                           const std::map<std::string, StateVar> &state,
                                           LoadReport &report) {
  auto parts = ckpt.table(var.name());
  if (!parts)
    return parts.takeError();
  if (!*parts)
    return false;
  TableInfo want = wantedTable(main, startup, var.name());
  Tensor &w = scope.get(var.name());
  if (w.dtype() != proto::F32 || w.rank() != 2)
    return makeError("{0}: table {1} is f32 [rows, width] but the program's var is {2}",
                     ckpt.describe(), var.name(), typeString(var.type()));
  int64_t height = w.dim(0), width = w.dim(1);
  uint64_t stream = want.init.streamSeed();
  for (int64_t k = 0; k < height; ++k)
    want.init.weightsFrom(stream, static_cast<uint64_t>(k), width, w.data<float>() + k * width);
  // The state slots the program keeps for this table, each from the startup's values.
  std::map<std::string, std::string> stateVars = stateVarsOf(state, var.name());
  std::vector<std::pair<StateSlot, Tensor *>> slots;
  for (const StateSlot &slot : tableStateSlots(want.optimizer, want.rowWise, width)) {
    auto it = stateVars.find(slot.slot);
    Tensor *t = it == stateVars.end() ? nullptr : scope.find(it->second);
    if (t && t->dtype() == proto::F32 && t->rank() >= 1 && t->dim(0) == height &&
        t->numel() == height * slot.floats)
      slots.emplace_back(slot, t);
  }
  auto counts = readTableRows(
      ckpt, want, {}, [](uint64_t) { return true; },
      [&](const SavedRow &r) -> llvm::Error {
        if (r.key >= static_cast<uint64_t>(height))
          return makeError("{0}: table {1} has key {2}, past the {3} rows this program's var "
                           "holds (fold keys with id_mod, or give it more rows)",
                           ckpt.describe(), var.name(), r.key, height);
        std::memcpy(w.data<float>() + r.key * width, r.weights, width * sizeof(float));
        if (r.state)
          for (auto &[slot, t] : slots)
            std::memcpy(t->data<float>() + r.key * slot.floats, r.state + slot.offset,
                        slot.floats * sizeof(float));
        return llvm::Error::success();
      });
  if (!counts)
    return counts.takeError();
  report.loaded.push_back(var.name());
  report.tableRows += (*counts)->rows;
  // The table's state counts as found only for the slots it filled.
  for (const auto &[slot, name] : stateVars) {
    bool filled = (*counts)->state && llvm::any_of(slots, [&, &slot = slot](const auto &e) {
                    return e.first.slot == slot;
                  });
    (filled ? report.stateFound : report.stateMissing).push_back(name);
  }
  return true;
}

llvm::Expected<LoadReport> loadSingleMachine(const proto::Program &main,
                                             const proto::Program &startup, Scope &scope,
                                             const CheckpointReader &ckpt) {
  LoadReport report;
  std::map<std::string, StateVar> state = optimizerStateVars(main.blocks(0));
  llvm::StringSet<> fromTables; // params read as tables: their state is accounted for there
  for (const proto::Var &v : main.blocks(0).vars()) {
    if (!v.persistable() || fromTables.count(v.name()))
      continue;
    auto t = ckpt.dense(v.name(), &v);
    if (!t)
      return t.takeError();
    if (*t) {
      scope.get(v.name()) = std::move(**t);
      report.loaded.push_back(v.name());
      if (state.count(v.name()))
        report.stateFound.push_back(v.name());
      continue;
    }
    if (v.is_parameter()) {
      auto fromTable = denseFromTable(main, startup, scope, ckpt, v, state, report);
      if (!fromTable)
        return fromTable.takeError();
      if (!*fromTable)
        return makeError("{0} holds nothing for parameter {1} (no {1}.npy, no pserver block of "
                         "it, no table {1}); was it saved from this model?",
                         ckpt.describe(), v.name());
      for (const auto &[name, s] : state)
        if (s.param == v.name())
          fromTables.insert(name);
      continue;
    }
    if (state.count(v.name()))
      report.stateMissing.push_back(v.name());
  }
  // A table's state var listed before its table was counted missing above: recount.
  llvm::erase_if(report.stateMissing, [&](const std::string &n) {
    return fromTables.count(n) && llvm::is_contained(report.stateFound, n);
  });
  llvm::sort(report.stateMissing);
  report.stateMissing.erase(std::unique(report.stateMissing.begin(), report.stateMissing.end()),
                            report.stateMissing.end());
  return report;
}

llvm::Error checkStateComplete(const LoadReport &report, const CheckpointReader &ckpt,
                               bool training) {
  if (!training || report.stateFound.empty() || report.stateMissing.empty())
    return llvm::Error::success();
  return makeError("{0} holds optimizer state for {1} vars but none for {2}: training on would "
                   "mix a trained optimizer with a fresh one; load a complete checkpoint, or one "
                   "without optimizer state (an export) to start the optimizer fresh",
                   ckpt.describe(), report.stateFound.size(), report.stateMissing.front());
}

} // namespace oar
