// The program verifier: every op against its schema, every var resolved, shapes consistent.
#pragma once

#include "ir/program.h"

namespace oar {

/// Checks `prog`; the error names `source` (a file name or a description), the block, the op
/// index and type, the slot and the var.
llvm::Error verifyProgram(const proto::Program &prog, llvm::StringRef source);

/// loadProgram() then verifyProgram(), errors naming the file.
llvm::Expected<proto::Program> loadVerifiedProgram(llvm::StringRef path);

} // namespace oar
