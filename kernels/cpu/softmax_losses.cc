// CPU kernels of softmax and the per-example losses, with their gradients.
#include <cmath>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

/// Stable softmax of one row of `n` values.
template <typename T> static void softmaxRow(const T *x, T *out, int64_t n) {
  T mx = x[0];
  for (int64_t j = 1; j < n; ++j)
    mx = std::max(mx, x[j]);
  T sum = 0;
  for (int64_t j = 0; j < n; ++j)
    sum += out[j] = std::exp(x[j] - mx);
  for (int64_t j = 0; j < n; ++j)
    out[j] /= sum;
}

template <typename T> static llvm::Error softmax(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t n = x.dims().back(), rows = x.numel() / std::max<int64_t>(n, 1);
  T *out = ctx.output("Out").data<T>();
  for (int64_t r = 0; r < rows; ++r)
    softmaxRow(x.data<T>() + r * n, out + r * n, n);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(softmax, softmax);

// dX = Out * (dOut - sum(dOut * Out)) per row.
template <typename T> static llvm::Error softmaxGrad(KernelContext &ctx) {
  const Tensor &o = ctx.input("Out");
  int64_t n = o.dims().back(), rows = o.numel() / std::max<int64_t>(n, 1);
  const T *out = o.data<T>(), *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    T dot = 0;
    for (int64_t j = 0; j < n; ++j)
      dot += dout[r * n + j] * out[r * n + j];
    for (int64_t j = 0; j < n; ++j)
      dx[r * n + j] = out[r * n + j] * (dout[r * n + j] - dot);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(softmax_grad, softmaxGrad);

/// The label of row r, checked against the class count.
static llvm::Expected<int64_t> labelAt(const KernelContext &ctx, int64_t r, int64_t classes) {
  int64_t l = ctx.input("Label").data<int64_t>()[r];
  if (l < 0 || l >= classes)
    return makeError("label {0} in row {1} is outside [0, {2})", l, r, classes);
  return l;
}

template <typename T> static llvm::Error crossEntropy(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t rows = x.dim(0), c = x.dim(1);
  T *y = ctx.output("Y").data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    auto l = labelAt(ctx, r, c);
    if (!l)
      return l.takeError();
    y[r] = -std::log(std::max(x.data<T>()[r * c + *l], T(1e-20)));
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(cross_entropy, crossEntropy);

template <typename T> static llvm::Error crossEntropyGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t rows = x.dim(0), c = x.dim(1);
  const T *dy = ctx.input("Y@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  std::fill_n(dx, x.numel(), T(0));
  for (int64_t r = 0; r < rows; ++r) {
    auto l = labelAt(ctx, r, c);
    if (!l)
      return l.takeError();
    dx[r * c + *l] = -dy[r] / std::max(x.data<T>()[r * c + *l], T(1e-20));
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(cross_entropy_grad, crossEntropyGrad);

template <typename T> static llvm::Error softmaxCe(KernelContext &ctx) {
  const Tensor &x = ctx.input("Logits");
  int64_t rows = x.dim(0), c = x.dim(1);
  T *sm = ctx.output("Softmax").data<T>(), *loss = ctx.output("Loss").data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = x.data<T>() + r * c;
    auto l = labelAt(ctx, r, c);
    if (!l)
      return l.takeError();
    T mx = row[0];
    for (int64_t j = 1; j < c; ++j)
      mx = std::max(mx, row[j]);
    T sum = 0;
    for (int64_t j = 0; j < c; ++j)
      sum += sm[r * c + j] = std::exp(row[j] - mx);
    for (int64_t j = 0; j < c; ++j)
      sm[r * c + j] /= sum;
    loss[r] = std::log(sum) - (row[*l] - mx); // log-sum-exp minus the label's logit
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(softmax_with_cross_entropy, softmaxCe);

template <typename T> static llvm::Error softmaxCeGrad(KernelContext &ctx) {
  const Tensor &s = ctx.input("Softmax");
  int64_t rows = s.dim(0), c = s.dim(1);
  const T *sm = s.data<T>(), *dl = ctx.input("Loss@GRAD").data<T>();
  T *dx = ctx.output("Logits@GRAD").data<T>();
  for (int64_t r = 0; r < rows; ++r) {
    auto l = labelAt(ctx, r, c);
    if (!l)
      return l.takeError();
    for (int64_t j = 0; j < c; ++j)
      dx[r * c + j] = (sm[r * c + j] - (j == *l ? T(1) : T(0))) * dl[r];
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(softmax_with_cross_entropy_grad, softmaxCeGrad);

template <typename T> static llvm::Error sigmoidCe(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *xv = x.data<T>(), *lv = ctx.input("Label").data<T>();
  T *out = ctx.output("Out").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = std::max(xv[i], T(0)) - xv[i] * lv[i] + std::log1p(std::exp(-std::abs(xv[i])));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits, sigmoidCe);

template <typename T> static llvm::Error sigmoidCeGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *xv = x.data<T>(), *lv = ctx.input("Label").data<T>();
  const T *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    dx[i] = (T(1) / (T(1) + std::exp(-xv[i])) - lv[i]) * dout[i];
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits_grad, sigmoidCeGrad);

template <typename T> static llvm::Error squareError(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *xv = x.data<T>(), *yv = ctx.input("Y").data<T>();
  T *out = ctx.output("Out").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = (xv[i] - yv[i]) * (xv[i] - yv[i]);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(square_error_cost, squareError);

template <typename T> static llvm::Error squareErrorGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *xv = x.data<T>(), *yv = ctx.input("Y").data<T>();
  const T *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr;
  T *dy = ctx.hasOutput("Y@GRAD") ? ctx.output("Y@GRAD").data<T>() : nullptr;
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i) {
    T g = 2 * (xv[i] - yv[i]) * dout[i];
    if (dx)
      dx[i] = g;
    if (dy)
      dy[i] = -g;
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(square_error_cost_grad, squareErrorGrad);

} // namespace oar::cpu
