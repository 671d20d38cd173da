// The index of a pserver's saved blocks.
#include "checkpoint/pserver_blocks.h"

#include "ir/names.h"
#include "ops/op_registry.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

llvm::Expected<std::vector<SavedBlock>> pserverBlocks(const proto::Program &pserver) {
  const proto::Block &root = pserver.blocks(0);
  const proto::Op *listen = nullptr;
  for (const proto::Op &op : root.ops())
    if (op.type() == "listen_and_serv")
      listen = &op;
  if (!listen) // nothing is served: nothing to cut
    return std::vector<SavedBlock>{};
  ops::AttrReader attrs(*listen, *ops::lookupOp("listen_and_serv"));
  auto blocks = attrs.getStrings("param_blocks"), params = attrs.getStrings("block_params");
  auto begins = attrs.getInts("block_row_begin");
  if (params.size() != blocks.size() || begins.size() != blocks.size())
    return makeError("listen_and_serv: {0} param_blocks but {1} block_params and {2} "
                     "block_row_begin",
                     blocks.size(), params.size(), begins.size());
  std::vector<SavedBlock> out;
  llvm::StringSet<> seen;
  auto dimsOf = [&](llvm::StringRef name) -> std::vector<int64_t> {
    const proto::Var *v = findVar(root, name);
    return v ? std::vector<int64_t>(v->type().dims().begin(), v->type().dims().end())
             : std::vector<int64_t>{};
  };
  for (size_t i = 0; i < blocks.size(); ++i) {
    SavedBlock param{blocks[i], params[i], true, begins[i], /*param=*/true};
    out.push_back(param);
    seen.insert(blocks[i]);
  }
  // Optimizer state: every other input of the op that updates a param block.
  for (int b = 1; b < pserver.blocks_size(); ++b)
    for (const proto::Op &op : pserver.blocks(b).ops()) {
      if (op.role() != proto::OPTIMIZE)
        continue;
      const std::string *param = slotName(findInputSlot(op, "Param"));
      if (!param)
        continue;
      auto at = llvm::find(blocks, *param);
      if (at == blocks.end())
        continue;
      size_t i = static_cast<size_t>(at - blocks.begin());
      bool split = blocks[i] != params[i];
      std::vector<int64_t> paramDims = dimsOf(*param);
      out[i].optimizer = op.type();
      if (const ops::OpSchema *schema = ops::lookupOp(op.type());
          schema && schema->findAttr("row_wise"))
        out[i].rowWise = ops::AttrReader(op, *schema).getBool("row_wise");
      for (const proto::Slot &slot : op.inputs()) {
        if (slot.slot() == "Param" || slot.slot() == "Grad" || slot.slot() == "LearningRate")
          continue;
        for (const std::string &var : slot.names()) {
          if (!seen.insert(var).second)
            continue;
          std::string whole = var;
          if (split)
            if (auto parsed = blockOf(var))
              whole = parsed->first;
          bool sliced = !paramDims.empty() && dimsOf(var) == paramDims;
          SavedBlock state{var, whole, sliced, sliced ? begins[i] : 0};
          state.paramBlock = blocks[i];
          state.slot = slot.slot();
          out.push_back(std::move(state));
        }
      }
    }
  return out;
}

std::string blockIndexText(const std::vector<SavedBlock> &blocks) {
  std::string text = "oar-blocks 1\n";
  for (const SavedBlock &b : blocks)
    text += b.sliced ? llvm::formatv("sliced {0} {1} {2}\n", b.saved, b.whole, b.rowBegin).str()
                     : llvm::formatv("copy {0} {1}\n", b.saved, b.whole).str();
  return text;
}

llvm::Expected<std::vector<SavedBlock>> parseBlockIndex(llvm::StringRef text,
                                                        llvm::StringRef path) {
  llvm::SmallVector<llvm::StringRef, 64> lines;
  text.split(lines, '\n', -1, /*KeepEmpty=*/false);
  if (lines.empty() || lines[0] != "oar-blocks 1")
    return makeError("{0}: not a block index (its first line must be \"oar-blocks 1\")", path);
  std::vector<SavedBlock> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    llvm::SmallVector<llvm::StringRef, 4> f;
    lines[i].split(f, ' ', -1, false);
    SavedBlock b;
    bool ok = false;
    if (f.size() == 4 && f[0] == "sliced")
      ok = !f[3].getAsInteger(10, b.rowBegin) && b.rowBegin >= 0;
    else if (f.size() == 3 && f[0] == "copy")
      ok = true, b.sliced = false;
    if (!ok)
      return makeError("{0}:{1}: \"{2}\" is not \"sliced SAVED WHOLE ROW\" or \"copy SAVED WHOLE\"",
                       path, i + 1, lines[i]);
    b.saved = f[1].str(), b.whole = f[2].str();
    out.push_back(std::move(b));
  }
  return out;
}

} // namespace oar
