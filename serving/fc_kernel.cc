// CPU kernel of fc: the GEMM, then the bias and the activation in one pass over its output while
// the output is still in cache; or, given WBf16, the whole layer in bfloat16; or, given WPadded
// and an input mostly of zeros, only the nonzeros' share of the product.
#include <algorithm>

#include "kernels/cpu/cpu_util.h"
#include "serving/bf16_layer.h"
#include "serving/sparse_input_layer.h"

namespace oar::cpu {

template <typename T> static llvm::Error fc(KernelContext &ctx) {
  const Tensor &x = ctx.input("Input"), &w = ctx.input("W");
  int64_t k = w.dim(0), n = w.dim(1), m = x.numel() / std::max<int64_t>(k, 1);
  T *out = ctx.output("Out").data<T>();
  const T *bias = ctx.input("Bias").data<T>();
  bool relu = ctx.attrs().getString("activation") == "relu";
  if (ctx.hasInput("WBf16")) {
    if constexpr (std::is_same_v<T, float>)
      return bf16Layer(x.data<float>(), m, k, ctx.input("WBf16"), n, bias, relu, out);
    return makeError("{0}: a bf16 layer takes an f32 model", ctx.describeInput("WBf16"));
  }
  if constexpr (std::is_same_v<T, float>)
    if (ctx.hasInput("WPadded") && sparseInputPays(x.data<float>(), m, k)) {
      const Tensor &padded = ctx.input("WPadded");
      if (padded.dtype() != proto::F32 || padded.rank() != 2 || padded.dim(0) != k + 1 ||
          padded.dim(1) != paddedColumns(n))
        return makeError("{0}: must be W and Bias padded to [{1}, {2}] (padWeightRows)",
                         ctx.describeInput("WPadded"), k + 1, paddedColumns(n));
      sparseInputLayer(x.data<float>(), m, k, padded, n, relu, out);
      return llvm::Error::success();
    }
  gemm(false, false, m, n, k, T(1), x.data<T>(), k, w.data<T>(), n, T(0), out, n);
  for (int64_t i = 0; i < m; ++i) {
    T *row = out + i * n;
    if (relu)
      for (int64_t j = 0; j < n; ++j)
        row[j] = std::max(row[j] + bias[j], T(0));
    else
      for (int64_t j = 0; j < n; ++j)
        row[j] += bias[j];
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(fc, fc);

} // namespace oar::cpu
