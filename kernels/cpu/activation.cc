// CPU kernels of relu, sigmoid, tanh and their gradients (computed from Out).
#include <cmath>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T, typename F> static llvm::Error unary(KernelContext &ctx, F f) {
  const Tensor &x = ctx.input("X");
  const T *in = x.data<T>();
  T *out = ctx.output("Out").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = f(in[i]);
  return llvm::Error::success();
}

// dX = dOut * f'(Out)
template <typename T, typename F> static llvm::Error unaryGrad(KernelContext &ctx, F dfFromOut) {
  const Tensor &o = ctx.input("Out");
  const T *out = o.data<T>(), *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  const int64_t n = o.numel();
  for (int64_t i = 0; i < n; ++i)
    dx[i] = dout[i] * dfFromOut(out[i]);
  return llvm::Error::success();
}

template <typename T> static llvm::Error relu(KernelContext &c) {
  return unary<T>(c, [](T v) { return std::max(v, T(0)); });
}
template <typename T> static llvm::Error sigmoid(KernelContext &c) {
  return unary<T>(c, [](T v) { return T(1) / (T(1) + std::exp(-v)); });
}
template <typename T> static llvm::Error tanhKernel(KernelContext &c) {
  return unary<T>(c, [](T v) { return std::tanh(v); });
}
template <typename T> static llvm::Error reluGrad(KernelContext &c) {
  return unaryGrad<T>(c, [](T o) { return T(o > T(0)); });
}
template <typename T> static llvm::Error sigmoidGrad(KernelContext &c) {
  return unaryGrad<T>(c, [](T o) { return o * (T(1) - o); });
}
template <typename T> static llvm::Error tanhGrad(KernelContext &c) {
  return unaryGrad<T>(c, [](T o) { return T(1) - o * o; });
}

OAR_CPU_FLOAT_KERNELS(relu, relu);
OAR_CPU_FLOAT_KERNELS(sigmoid, sigmoid);
OAR_CPU_FLOAT_KERNELS(tanh, tanhKernel);
OAR_CPU_FLOAT_KERNELS(relu_grad, reluGrad);
OAR_CPU_FLOAT_KERNELS(sigmoid_grad, sigmoidGrad);
OAR_CPU_FLOAT_KERNELS(tanh_grad, tanhGrad);

} // namespace oar::cpu
