// CPU kernels of scale and sum.
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error scale(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T s = static_cast<T>(ctx.attrs().getFloat("scale")),
    b = static_cast<T>(ctx.attrs().getFloat("bias"));
  const T *in = x.data<T>();
  T *out = ctx.output("Out").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = s * in[i] + b;
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(scale, scale);

// Out may be one of the inputs (in-place accumulation), so sum into a temporary first.
template <typename T> static llvm::Error sum(KernelContext &ctx) {
  int64_t n = ctx.input("X", 0).numel();
  std::vector<T> acc(ctx.input("X", 0).data<T>(), ctx.input("X", 0).data<T>() + n);
  for (size_t i = 1; i < ctx.inputCount("X"); ++i) {
    const T *in = ctx.input("X", i).data<T>();
    for (int64_t e = 0; e < n; ++e)
      acc[e] += in[e];
  }
  std::copy(acc.begin(), acc.end(), ctx.output("Out").data<T>());
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sum, sum);

} // namespace oar::cpu
