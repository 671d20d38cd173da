// Which whole var each var a pserver saves is a part of: the index (BLOCKS) beside a pserver's
// blocks in a save or a checkpoint, so any loader can put params and optimizer state together
// again whatever number of pservers cut them.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

/// One var a pserver saves.
struct SavedBlock {
  std::string saved; ///< its name on the pserver (fc_0.w_0.block1, fc_0.w_0_moment_0.block1)
  std::string whole; ///< the single-machine var it belongs to (fc_0.w_0, fc_0.w_0_moment_0)
  /// Sliced: the block holds rows [rowBegin, rowBegin + its rows) of `whole` (elements, for a
  /// var of rank 1). Otherwise it holds a copy of the whole var (a beta power of one block).
  bool sliced = true;
  int64_t rowBegin = 0;
  // What the pserver program says of the block; not in the index's text.
  bool param = false;     ///< a param block (else optimizer state)
  std::string optimizer;  ///< param: the op that updates it (sgd, adagrad, ...)
  bool rowWise = false;   ///< param: that op's row_wise attr (adagrad)
  std::string paramBlock; ///< state: the param block it updates beside
  std::string slot;       ///< state: its slot in that op (Moment, Beta1Pow, ...)
};

/// The file name of the index in a pserver's directory.
inline constexpr const char *kBlockIndexFile = "BLOCKS";

/// The blocks of a pserver program: its param blocks (listen_and_serv) and the optimizer state
/// each optimize block updates beside its param block. None for a program without
/// listen_and_serv.
llvm::Expected<std::vector<SavedBlock>> pserverBlocks(const proto::Program &pserver);

/// The index as text, and back (errors name `path` and the line).
std::string blockIndexText(const std::vector<SavedBlock> &blocks);
llvm::Expected<std::vector<SavedBlock>> parseBlockIndex(llvm::StringRef text, llvm::StringRef path);

} // namespace oar
