// CPU updates that touch only some rows of a parameter: selected-rows gradients, row-wise state.
#pragma once

#include "executor/kernel.h"

namespace oar::cpu {

// Each merges duplicate ids of a selected-rows Grad (summing their rows) first, then changes
// only the rows it holds: the rest of Param and its state stay as they are. Errors name the op's
// Grad var (an id outside Param's rows).

/// sgd with a selected-rows Grad: p[r] -= lr * g[r].
llvm::Error sparseSgd(KernelContext &ctx);
/// adagrad with a selected-rows Grad, one accumulator per element.
llvm::Error sparseAdagrad(KernelContext &ctx);
/// adagrad with row_wise: one accumulator per row, s[r] += mean(g[r]^2); p[r] -= lr * g[r] /
/// (sqrt(s[r]) + eps). A dense Grad touches every row.
llvm::Error rowWiseAdagrad(KernelContext &ctx);
/// Lazy adam: a selected-rows Grad, and Beta1Pow/Beta2Pow holding one beta^t per row.
llvm::Error lazyAdam(KernelContext &ctx);

} // namespace oar::cpu
