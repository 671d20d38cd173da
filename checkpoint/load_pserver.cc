// Cutting a pserver's blocks from whole vars of a checkpoint.
#include "checkpoint/load_pserver.h"

#include <cstring>

#include "checkpoint/table_rows.h"
#include "support/error.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

namespace {

/// A param block that the checkpoint holds as a distributed table (a job with --local-tables
/// loading a job's save with its tables on the pservers): its rows are the keys of its row range,
/// each starting as the table's rows start, then the saved rows; the optimizer's state blocks
/// beside it take the rows' state when the layout is the same. Returns whether it did.
llvm::Expected<bool> blockFromTable(const proto::Program &pserver, Scope &scope,
                                    const CheckpointReader &ckpt, const SavedBlock &param,
                                    const std::vector<SavedBlock> &blocks, LoadReport &report,
                                    llvm::StringSet<> &done) {
  const std::vector<TablePartFiles> *parts = ckpt.tableParts(param.whole);
  if (!parts || parts->empty())
    return false;
  auto info = readTableInfo(parts->front());
  if (!info)
    return info.takeError();
  if (!*info)
    return makeError("{0}: table {1} was saved without its description (an older oar): load it "
                     "on one machine and save it there first",
                     ckpt.describe(), param.whole);
  const proto::Var *v = findVar(pserver.blocks(0), param.saved);
  llvm::ArrayRef<int64_t> dims = dimsOf(v->type());
  if (v->type().dtype() != proto::F32 || dims.size() != 2 || dims[1] != (*info)->width)
    return makeError("{0}: table {1} has rows of {2} but block {3} is {4}", ckpt.describe(),
                     param.whole, (*info)->width, param.saved, typeString(v->type()));
  int64_t rows = dims[0], width = dims[1];
  auto begin = static_cast<uint64_t>(param.rowBegin);
  TableInfo want = **info;
  want.optimizer =
      param.optimizer == "sgd" || param.optimizer == "adagrad" || param.optimizer == "adam"
          ? param.optimizer
          : "";
  want.rowWise = param.rowWise;
  Tensor block(proto::F32, dims);
  uint64_t stream = want.init.streamSeed();
  for (int64_t r = 0; r < rows; ++r)
    want.init.weightsFrom(stream, begin + r, width, block.data<float>() + r * width);
  // The state blocks beside it, from the startup's values; rows in the save overwrite theirs.
  std::vector<std::pair<StateSlot, Tensor>> states;
  std::vector<const SavedBlock *> stateBlocks;
  for (const SavedBlock &b : blocks)
    if (b.paramBlock == param.saved)
      stateBlocks.push_back(&b);
  for (const StateSlot &slot : tableStateSlots(want.optimizer, want.rowWise, width))
    for (const SavedBlock *b : stateBlocks)
      if (const Tensor *t = scope.find(b->saved);
          b->slot == slot.slot && t && t->dtype() == proto::F32 && t->rank() >= 1 &&
          t->dim(0) == rows && t->numel() == rows * slot.floats)
        states.emplace_back(slot, t->clone());
  auto counts = readTableRows(
      ckpt, want, {}, [&](uint64_t key) { return key >= begin && key - begin < uint64_t(rows); },
      [&](const SavedRow &row) -> llvm::Error {
        int64_t r = static_cast<int64_t>(row.key - begin);
        std::memcpy(block.data<float>() + r * width, row.weights, width * sizeof(float));
        if (row.state)
          for (auto &[slot, t] : states)
            std::memcpy(t.data<float>() + r * slot.floats, row.state + slot.offset,
                        slot.floats * sizeof(float));
        return llvm::Error::success();
      });
  if (!counts)
    return counts.takeError();
  scope.get(param.saved) = std::move(block);
  report.loaded.push_back(param.saved);
  report.tableRows += (*counts)->rows;
  done.insert(param.whole);
  for (const SavedBlock *b : stateBlocks) {
    auto filled = llvm::find_if(states, [&](const auto &s) { return s.first.slot == b->slot; });
    bool found = (*counts)->state && filled != states.end();
    if (found)
      scope.get(b->saved) = std::move(filled->second);
    (found ? report.stateFound : report.stateMissing).push_back(b->whole);
    done.insert(b->whole);
  }
  return true;
}

} // namespace

llvm::Expected<LoadReport> loadPserverBlocks(const proto::Program &pserver, Scope &scope,
                                             const CheckpointReader &ckpt) {
  auto blocks = pserverBlocks(pserver);
  if (!blocks)
    return blocks.takeError();
  LoadReport report;
  llvm::StringSet<> fromTables; // whole vars read as tables, with their state
  for (const SavedBlock &b : *blocks)
    if (b.param && findVar(pserver.blocks(0), b.saved) && !ckpt.holdsDense(b.whole))
      if (auto done = blockFromTable(pserver, scope, ckpt, b, *blocks, report, fromTables); !done)
        return done.takeError();
  std::map<std::string, Tensor> wholes; // each whole var read once, for all its blocks here
  for (const SavedBlock &b : *blocks) {
    if (fromTables.count(b.whole))
      continue;
    const proto::Var *v = findVar(pserver.blocks(0), b.saved);
    const char *what = b.param ? "param block" : "block of optimizer state";
    if (!v)
      return makeError("listen_and_serv: {0} {1} is not declared", what, b.saved);
    if (v->type().dims().empty())
      return makeError("listen_and_serv: {0} {1} is declared without rows", what, b.saved);
    if (!wholes.count(b.whole)) {
      auto t = ckpt.dense(b.whole);
      if (!t)
        return t.takeError();
      if (!*t) {
        if (b.param)
          return makeError("{0} holds nothing for parameter {1} (no {1}.npy, no pserver block of "
                           "it, no table {1}); was it saved from this model?",
                           ckpt.describe(), b.whole);
        report.stateMissing.push_back(b.whole);
        continue;
      }
      wholes[b.whole] = std::move(**t);
    }
    const Tensor &src = wholes[b.whole];
    llvm::ArrayRef<int64_t> dims = dimsOf(v->type());
    Tensor block(v->type().dtype(), dims);
    if (!b.sliced) {
      if (src.dtype() != block.dtype() || src.numel() != block.numel())
        return makeError("{0}: {1} holds {2}{3}, but block {4} is {5}", ckpt.describe(), b.whole,
                         dtypeName(src.dtype()), dimsString(src.dims()), b.saved,
                         typeString(v->type()));
      std::memcpy(block.raw(), src.raw(), src.bytes());
    } else {
      int64_t rows = dims.empty() ? 1 : dims[0], width = numElements(dims.drop_front());
      int64_t srcRows = src.rank() == 0 ? 1 : src.dim(0);
      bool fits = src.dtype() == block.dtype() && src.rank() == std::max<size_t>(dims.size(), 1) &&
                  b.rowBegin >= 0 && b.rowBegin <= srcRows - rows && src.numel() == srcRows * width;
      if (!fits)
        return makeError("{0}: {1} holds {2}{3}, which has no {4} rows from row {5} of width {6} "
                         "({7}) for block {8}",
                         ckpt.describe(), b.whole, dtypeName(src.dtype()), dimsString(src.dims()),
                         rows, b.rowBegin, width, dtypeName(v->type().dtype()), b.saved);
      size_t rowBytes = static_cast<size_t>(width) * dtypeSize(src.dtype());
      std::memcpy(block.raw(), static_cast<const char *>(src.raw()) + b.rowBegin * rowBytes,
                  rows * rowBytes);
    }
    scope.get(b.saved) = std::move(block);
    report.loaded.push_back(b.saved);
    if (!b.param)
      report.stateFound.push_back(b.whole);
  }
  return report;
}

} // namespace oar
