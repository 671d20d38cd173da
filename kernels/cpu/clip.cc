// CPU kernel of clip_by_global_norm; the squares are summed in double, tensor by tensor.
#include <cmath>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error clipByGlobalNorm(KernelContext &ctx) {
  double sq = 0;
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    const Tensor &x = ctx.input("X", i);
    const T *v = x.data<T>();
    for (int64_t k = 0; k < x.numel(); ++k)
      sq += double(v[k]) * v[k];
  }
  const double maxNorm = ctx.attrs().getFloat("max_norm");
  const T factor = T(std::min(1.0, maxNorm / (std::sqrt(sq) + 1e-6)));
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    const Tensor &x = ctx.input("X", i);
    const T *v = x.data<T>();
    T *out = ctx.output("Out", i).data<T>();
    for (int64_t k = 0; k < x.numel(); ++k)
      out[k] = v[k] * factor;
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(clip_by_global_norm, clipByGlobalNorm);

} // namespace oar::cpu
