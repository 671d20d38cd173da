// Pruning a training program to its predictions.
#include "serving/inference_program.h"

#include "checkpoint/row_init.h"
#include "ir/names.h"
#include "ops/test_mode.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

llvm::Expected<std::vector<std::string>> servedOutputs(const proto::Program &main) {
  if (main.predictions_size() > 0)
    return std::vector<std::string>(main.predictions().begin(), main.predictions().end());
  const proto::Block &block = main.blocks(0);
  for (const char *metric : {"auc", "accuracy"})
    for (const proto::Op &op : block.ops())
      if (op.type() == metric)
        if (const std::string *in =
                slotName(findInputSlot(op, metric == llvm::StringRef("auc") ? "Predict" : "Out")))
          return std::vector<std::string>{*in};
  for (const proto::Op &op : block.ops())
    if (op.type() == "square_error_cost")
      if (const std::string *in = slotName(findInputSlot(op, "X")))
        return std::vector<std::string>{*in};
  return makeError("the model names no prediction and has no auc, accuracy or square_error_cost "
                   "to find one by: name it (ModelBuilder::addPrediction) or pass --output VAR");
}

std::set<std::string> servedTables(const proto::Program &main) {
  std::set<std::string> tables;
  for (const proto::Op &op : main.blocks(0).ops()) {
    const proto::Attr *d = findAttr(op, "is_distributed");
    if (op.type() == "lookup_table" && d && d->b())
      if (const std::string *w = slotName(findInputSlot(op, "W")))
        tables.insert(*w);
  }
  return tables;
}

/// lookup_sorted_table in place of `lookup` of table `w`.
static proto::Op sortedLookup(const proto::Op &lookup, const std::string &w,
                              const proto::Program &startup) {
  const proto::Op *initOp = initializerOf(startup, w);
  RowInit init = rowInitOf(initOp ? *initOp : proto::Op(), w);
  const proto::Attr *pad = findAttr(lookup, "padding_idx");
  return makeOp("lookup_sorted_table",
                {{"Ids", opInputs(lookup, "Ids")},
                 {"Keys", {tableKeysName(w)}},
                 {"Values", {tableValuesName(w)}},
                 {"Index", {tableIndexName(w)}}},
                {{"Out", opOutputs(lookup, "Out")}},
                {{"padding_idx", pad ? pad->i() : int64_t(-1)},
                 {"table", w},
                 {"init", init.kind},
                 {"init_a", init.a},
                 {"init_b", init.b},
                 {"seed", init.seed}},
                proto::FORWARD);
}

llvm::Expected<proto::Program> inferenceProgram(const proto::Program &main,
                                                const proto::Program &startup,
                                                const std::vector<std::string> &outputs,
                                                const std::set<std::string> &tables) {
  const proto::Block &block = main.blocks(0);
  for (const std::string &out : outputs)
    if (!findVar(block, out))
      return makeError("prediction {0} is not a var of the model", out);
  // Walk the forward ops backwards from the outputs: an op is kept when it writes a var needed.
  llvm::StringSet<> needed;
  for (const std::string &out : outputs)
    needed.insert(out);
  std::vector<int> kept;
  for (int i = block.ops_size() - 1; i >= 0; --i) {
    const proto::Op &op = block.ops(i);
    if (op.role() != proto::FORWARD)
      continue;
    std::vector<std::string> outs = allOutputNames(op);
    if (!llvm::any_of(outs, [&](const std::string &n) { return needed.count(n); }))
      continue;
    kept.push_back(i);
    // A dropout serves as the identity of its X: its step counter and mask are not needed.
    for (const std::string &in : op.type() == "dropout" ? opInputs(op, "X") : allInputNames(op))
      needed.insert(in);
  }
  std::reverse(kept.begin(), kept.end());
  llvm::StringSet<> written;
  for (int i : kept)
    for (const std::string &n : block.ops(i).type() == "dropout" ? opOutputs(block.ops(i), "Out")
                                                                 : allOutputNames(block.ops(i))) {
      written.insert(n);
      needed.insert(n); // every output of a kept op is declared (batch_norm's saved statistics)
    }

  proto::Program out = newProgram();
  out.set_version(main.version());
  proto::Block &dst = *out.mutable_blocks(0);
  // The fed vars the ops read: declared inputs of the model that no kept op writes. A model
  // without a data feed (built in Python and fed by its caller) is fed all of them.
  const proto::DataFeed &feed =
      main.test_feed().columns_size() > 0 ? main.test_feed() : main.train_feed();
  bool fedByCaller = feed.columns_size() == 0;
  for (const proto::Var &v : block.vars()) {
    if (!needed.count(v.name()) || written.count(v.name()) || v.persistable())
      continue;
    if (!fedByCaller && !llvm::is_contained(feed.columns(), v.name()))
      return makeError("prediction {0} needs {1}, which is neither fed by the model's data feed "
                       "nor computed from it",
                       llvm::join(outputs, ", "), v.name());
    out.add_inputs(v.name());
  }
  for (const proto::Var &v : block.vars()) {
    bool column = llvm::is_contained(feed.columns(), v.name());
    if (!needed.count(v.name()) && !column)
      continue;
    if (tables.count(v.name())) { // its keys and rows take its place
      int64_t width = v.type().dims_size() == 2 ? v.type().dims(1) : 1;
      proto::Var &keys = declareVar(dst, tableKeysName(v.name()), proto::I64, {-1});
      proto::Var &values = declareVar(dst, tableValuesName(v.name()), proto::F32, {-1, width});
      proto::Var &index = declareVar(dst, tableIndexName(v.name()), proto::I32, {-1});
      for (proto::Var *p : {&keys, &values, &index})
        p->set_persistable(true);
      continue;
    }
    proto::Var &copy = *dst.add_vars() = v;
    copy.set_trainable(false);
  }
  for (int i : kept) {
    const proto::Op &op = block.ops(i);
    const std::string *w = slotName(findInputSlot(op, "W"));
    if (op.type() == "lookup_table" && w && tables.count(*w)) {
      *dst.add_ops() = sortedLookup(op, *w, startup);
      continue;
    }
    if (op.type() == "dropout") { // the identity when serving; its step counter is not needed
      *dst.add_ops() = makeOp("scale", {{"X", opInputs(op, "X")}}, {{"Out", opOutputs(op, "Out")}},
                              {{"scale", 1.0f}}, proto::FORWARD);
      continue;
    }
    for (const std::string &in : allInputNames(op))
      if (tables.count(in))
        return makeError("op #{0} ({1}) reads table {2} other than by lookup_table; a served "
                         "table is a map from key to row",
                         i, op.type(), in);
    *dst.add_ops() = op;
  }
  ops::setTestMode(out); // batch_norm normalises with its running statistics
  for (const std::string &o : outputs)
    out.add_predictions(o);
  if (feed.columns_size() > 0) {
    proto::DataFeed &f = *out.mutable_test_feed() = feed;
    f.set_epochs(1);
    f.set_shuffle(false);
  }
  return out;
}

} // namespace oar
