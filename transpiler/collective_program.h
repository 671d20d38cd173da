// What collective and hybrid trainer programs share: the dense gradients, averaged over the
// trainers by one all-reduce op before the optimizer ops, which every trainer runs itself.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

/// The gradient each optimizer op of `block` reads, once each, in op order, and the index of the
/// first optimizer op (-1: none). Errors name an op that reads a distributed table or a sparse
/// gradient (those need pservers), and, with `noneIsError`, a block with no optimizer op.
llvm::Error denseGradients(const proto::Block &block, std::vector<std::string> &grads,
                           int &firstOptimizer, bool noneIsError);

/// The c_allreduce_avg op averaging `grads` in place over `trainers` (one fused buffer).
proto::Op allreduceAvgOp(const std::vector<std::string> &grads, int64_t trainers);

} // namespace oar
