// CPU kernels of dropout and dropout_grad; the mask's generator is kernels/dropout_mask.h.
#include "kernels/cpu/cpu_util.h"
#include "kernels/dropout_mask.h"

namespace oar::cpu {

template <typename T> static llvm::Error dropout(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X");
  const T *x = xt.data<T>();
  T *out = ctx.output("Out").data<T>(), *mask = ctx.output("Mask").data<T>();
  const int64_t n = xt.numel();
  const int64_t step = ctx.input("Step").data<int64_t>()[0];
  if (ctx.attrs().getBool("is_test")) {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = x[i];
      mask[i] = T(1);
    }
    ctx.output("StepOut").data<int64_t>()[0] = step;
    return llvm::Error::success();
  }
  const float p = ctx.attrs().getFloat("dropout_prob");
  const T keptScale = T(1) / (T(1) - T(p));
  uint64_t stream =
      kernels::dropoutStream(ctx.attrs().getInt("seed"), step, ctx.attrs().getInt("trainer_id"));
  // Each element's draw stands alone, so the threads split them with the same result.
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
  for (int64_t i = 0; i < n; ++i) {
    T m = T(kernels::dropoutKeeps(stream, i, p)) * keptScale;
    mask[i] = m;
    out[i] = x[i] * m;
  }
  ctx.output("StepOut").data<int64_t>()[0] = step + 1;
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(dropout, dropout);

template <typename T> static llvm::Error dropoutGrad(KernelContext &ctx) {
  const Tensor &m = ctx.input("Mask");
  const T *mask = m.data<T>(), *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  for (int64_t i = 0; i < m.numel(); ++i)
    dx[i] = dout[i] * mask[i];
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(dropout_grad, dropoutGrad);

} // namespace oar::cpu
