// Saving a single-machine program's vars so any loader reads them back.
#pragma once

#include "executor/tensor.h"
#include "ir/program.h"

namespace oar {

/// Writes every persistable var of `main` held by `scope` as `dir`/<var>.npy, replaced as a set,
/// and removes what a distributed save of the same vars left there (tables/<var>/ and the
/// pservers' blocks), so that the directory holds one save.
llvm::Error saveSingleMachine(const proto::Program &main, const Scope &scope, llvm::StringRef dir);

} // namespace oar
