// Cutting a pserver's blocks from whole vars of a checkpoint.
#include "checkpoint/load_pserver.h"

#include <cstring>

#include "ir/error.h"

namespace oar {

llvm::Expected<LoadReport> loadPserverBlocks(const proto::Program &pserver, Scope &scope,
                                             const CheckpointReader &ckpt) {
  auto blocks = pserverBlocks(pserver);
  if (!blocks)
    return blocks.takeError();
  LoadReport report;
  std::map<std::string, Tensor> wholes; // each whole var read once, for all its blocks here
  for (const SavedBlock &b : *blocks) {
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
                           "it{2}); was it saved from this model?",
                           ckpt.describe(), b.whole,
                           ckpt.tableParts(b.whole) ? "; it holds it as a distributed table, "
                                                      "which this job keeps dense: load it on "
                                                      "one machine and save it there first"
                                                    : "");
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
