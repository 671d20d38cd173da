// A var of a program's first block, the block Python runs and feeds.
#pragma once

#include "ir/program.h"

namespace oar::python {

/// Block 0's var `name`, or nullptr (also for a program with no block).
inline const proto::Var *mainBlockVar(const proto::Program &prog, llvm::StringRef name) {
  return prog.blocks_size() ? findVar(prog.blocks(0), name) : nullptr;
}

} // namespace oar::python
