// A run on one machine, as a node without a role is.
#pragma once

#include "runtime/node/start_node.h"

namespace oar::runtime {

/// Trains `options`' single-machine program (or evaluates it, or predicts with it), showing its
/// progress and results on io.out, and saves it. Errors name the file or flag at fault.
llvm::Error runOneMachine(const NodeOptions &options, const NodeIo &io);

} // namespace oar::runtime
