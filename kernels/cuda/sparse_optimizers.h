// CUDA updates that touch only some rows of a parameter: selected-rows gradients, row-wise state.
#pragma once

#include "executor/kernel.h"

namespace oar::cuda {

// Called by the dense kernels of optimizers.cu, as the CPU's call sparse_optimizers.h. Each
// merges duplicate ids of a selected-rows Grad (summing their rows in order) first, then changes
// only the rows it holds: the rest of Param and its state stay as they are. Errors name the op's
// Grad var (an id outside Param's rows). The arithmetic per element is the CPU's, in its order
// and without fused multiply-adds, so a row gets the same bits as on the CPU. T is float or
// double (Param's dtype).

/// sgd with a selected-rows Grad: p[r] -= lr * g[r].
template <typename T> llvm::Error sgdRows(KernelContext &ctx);
/// adagrad with a selected-rows Grad (row_wise false), one accumulator per element.
template <typename T> llvm::Error adagradRows(KernelContext &ctx);
/// adagrad with row_wise, a dense or a selected-rows Grad: one accumulator per row,
/// s[r] += mean(g[r]^2); p[r] -= lr * g[r] / (sqrt(s[r]) + eps).
template <typename T> llvm::Error rowWiseAdagrad(KernelContext &ctx);
/// Lazy adam: a selected-rows Grad, and Beta1Pow/Beta2Pow holding one beta^t per row.
template <typename T> llvm::Error lazyAdam(KernelContext &ctx);

extern template llvm::Error sgdRows<float>(KernelContext &);
extern template llvm::Error sgdRows<double>(KernelContext &);
extern template llvm::Error adagradRows<float>(KernelContext &);
extern template llvm::Error adagradRows<double>(KernelContext &);
extern template llvm::Error rowWiseAdagrad<float>(KernelContext &);
extern template llvm::Error rowWiseAdagrad<double>(KernelContext &);
extern template llvm::Error lazyAdam<float>(KernelContext &);
extern template llvm::Error lazyAdam<double>(KernelContext &);

} // namespace oar::cuda
