// CPU kernels of mean and reduce_sum, and their gradients.
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error mean(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  double sum = 0; // accumulate in double: the loss of a big batch is summed here
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    sum += x.data<T>()[i];
  ctx.output("Out").data<T>()[0] = static_cast<T>(sum / std::max<int64_t>(x.numel(), 1));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(mean, mean);

template <typename T> static llvm::Error meanGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T g = ctx.input("Out@GRAD").data<T>()[0] / static_cast<T>(std::max<int64_t>(x.numel(), 1));
  std::fill_n(ctx.output("X@GRAD").data<T>(), x.numel(), g);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(mean_grad, meanGrad);

/// For each element of X, the offset of the element of Out it sums into.
static std::vector<int64_t> reduceTargets(const KernelContext &ctx) {
  llvm::ArrayRef<int64_t> dims = ctx.input("X").dims();
  int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<bool> reduced(rank, ctx.attrs().getBool("reduce_all"));
  for (int64_t d : ctx.attrs().getInts("dim"))
    reduced[d < 0 ? d + rank : d] = true;
  // Out's strides over X's dims: 0 along reduced dims.
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (int64_t i = rank - 1; i >= 0; --i)
    if (!reduced[i]) {
      stride[i] = s;
      s *= dims[i];
    }
  std::vector<int64_t> targets(ctx.input("X").numel());
  std::vector<int64_t> idx(rank, 0);
  for (size_t e = 0; e < targets.size(); ++e) {
    int64_t off = 0;
    for (int64_t i = 0; i < rank; ++i)
      off += idx[i] * stride[i];
    targets[e] = off;
    for (int64_t i = rank - 1; i >= 0; --i) { // advance the multi-index
      if (++idx[i] < dims[i])
        break;
      idx[i] = 0;
    }
  }
  return targets;
}

template <typename T> static llvm::Error reduceSum(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  Tensor &out = ctx.output("Out");
  std::fill_n(out.data<T>(), out.numel(), T(0));
  auto targets = reduceTargets(ctx);
  for (size_t e = 0; e < targets.size(); ++e)
    out.data<T>()[targets[e]] += x.data<T>()[e];
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(reduce_sum, reduceSum);

template <typename T> static llvm::Error reduceSumGrad(KernelContext &ctx) {
  const T *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  auto targets = reduceTargets(ctx);
  for (size_t e = 0; e < targets.size(); ++e)
    dx[e] = dout[targets[e]];
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(reduce_sum_grad, reduceSumGrad);

} // namespace oar::cpu
