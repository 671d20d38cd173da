// CPU kernels of elementwise_add/sub/mul and their gradients, with Paddle's axis broadcasting:
// X viewed as [pre, n, post] and Y as [n].
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

enum class Bin { Add, Sub, Mul };

template <typename T, Bin op> static llvm::Error elementwise(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X"), &yt = ctx.input("Y");
  BroadcastShape s = broadcastShape(xt.dims(), yt.dims(), ctx.attrs().getInt("axis"));
  const T *x = xt.data<T>(), *y = yt.data<T>();
  T *out = ctx.output("Out").data<T>();
  auto apply = [](T a, T b) { return op == Bin::Add ? a + b : op == Bin::Sub ? a - b : a * b; };
  if (s.post == 1) { // Y runs along X's last dims (a bias add): vectorise over them
    const int64_t pre = s.pre, n = s.n;
    for (int64_t i = 0; i < pre; ++i)
      for (int64_t j = 0; j < n; ++j)
        out[i * n + j] = apply(x[i * n + j], y[j]);
    return llvm::Error::success();
  }
  for (int64_t i = 0; i < s.pre; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      int64_t base = (i * s.n + j) * s.post;
      T yv = y[j];
      for (int64_t k = 0; k < s.post; ++k) {
        T xv = x[base + k];
        out[base + k] = apply(xv, yv);
      }
    }
  return llvm::Error::success();
}

template <typename T, Bin op> static llvm::Error elementwiseGrad(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X"), &yt = ctx.input("Y");
  BroadcastShape s = broadcastShape(xt.dims(), yt.dims(), ctx.attrs().getInt("axis"));
  const T *x = xt.data<T>(), *y = yt.data<T>(), *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr;
  T *dy = ctx.hasOutput("Y@GRAD") ? ctx.output("Y@GRAD").data<T>() : nullptr;
  if (dy)
    std::fill_n(dy, s.n, T(0));
  if (s.post == 1) { // Y runs along X's last dims: accumulate dY row by row, vectorised
    const int64_t pre = s.pre, n = s.n;
    for (int64_t i = 0; i < pre; ++i) {
      const T *g = dout + i * n;
      if (dx)
        for (int64_t j = 0; j < n; ++j)
          dx[i * n + j] = op == Bin::Mul ? g[j] * y[j] : g[j];
      if (dy)
        for (int64_t j = 0; j < n; ++j)
          dy[j] += op == Bin::Mul ? g[j] * x[i * n + j] : op == Bin::Sub ? -g[j] : g[j];
    }
    return llvm::Error::success();
  }
  for (int64_t i = 0; i < s.pre; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      int64_t base = (i * s.n + j) * s.post;
      T acc = 0;
      for (int64_t k = 0; k < s.post; ++k) {
        T g = dout[base + k];
        if (dx)
          dx[base + k] = op == Bin::Mul ? g * y[j] : g;
        acc += op == Bin::Mul ? g * x[base + k] : g;
      }
      if (dy)
        dy[j] += op == Bin::Sub ? -acc : acc;
    }
  return llvm::Error::success();
}

template <typename T> static llvm::Error add(KernelContext &c) {
  return elementwise<T, Bin::Add>(c);
}
template <typename T> static llvm::Error sub(KernelContext &c) {
  return elementwise<T, Bin::Sub>(c);
}
template <typename T> static llvm::Error mul(KernelContext &c) {
  return elementwise<T, Bin::Mul>(c);
}
template <typename T> static llvm::Error addGrad(KernelContext &c) {
  return elementwiseGrad<T, Bin::Add>(c);
}
template <typename T> static llvm::Error subGrad(KernelContext &c) {
  return elementwiseGrad<T, Bin::Sub>(c);
}
template <typename T> static llvm::Error mulGrad(KernelContext &c) {
  return elementwiseGrad<T, Bin::Mul>(c);
}

OAR_CPU_FLOAT_KERNELS(elementwise_add, add);
OAR_CPU_FLOAT_KERNELS(elementwise_sub, sub);
OAR_CPU_FLOAT_KERNELS(elementwise_mul, mul);
OAR_CPU_FLOAT_KERNELS(elementwise_add_grad, addGrad);
OAR_CPU_FLOAT_KERNELS(elementwise_sub_grad, subGrad);
OAR_CPU_FLOAT_KERNELS(elementwise_mul_grad, mulGrad);

} // namespace oar::cpu
