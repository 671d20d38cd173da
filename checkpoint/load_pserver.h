// Loading a checkpoint of any layout into a pserver's blocks: each param block and each block of
// optimizer state is cut from the whole var, whatever number of pservers (or one machine) wrote
// it. The pserver's tables load through PserverTables (runtime/pserver/pserver_tables.h).
#pragma once

#include "checkpoint/load_model.h"

namespace oar {

/// Sets this pserver's param and state blocks in `scope` from `ckpt`. Every param block must
/// find its whole param; state is taken when present (LoadReport and checkStateComplete say
/// what is missing). Errors name the var and the checkpoint.
llvm::Expected<LoadReport> loadPserverBlocks(const proto::Program &pserver, Scope &scope,
                                             const CheckpointReader &ckpt);

} // namespace oar
