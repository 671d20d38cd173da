// CUDA kernels of softmax and the per-example losses, with their gradients.
#include "kernels/cuda/cuda_util.h"
#include "support/error.h"

namespace oar::cuda {

namespace {

constexpr int kWarp = 32;

/// std::max(a, b): `a` unless it is less than `b` (so a NaN `b` is skipped, as on the CPU).
template <typename T> __device__ T maxOf(T a, T b) { return a < b ? b : a; }

// Butterfly reductions: every lane ends with the same bits.
template <typename T> __device__ T warpMax(T v) {
  for (int o = kWarp / 2; o > 0; o /= 2)
    v = maxOf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
template <typename T> __device__ T warpSum(T v) {
  for (int o = kWarp / 2; o > 0; o /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/// One warp per row: the first row of the calling warp and the step to its next one. The
/// step is a whole number of warps, so the lanes of a warp always share the row.
__device__ int64_t firstRow() { return (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp; }
__device__ int64_t rowStep() { return int64_t(gridDim.x) * blockDim.x / kWarp; }
__device__ int lane() { return threadIdx.x % kWarp; }

template <typename T> struct RowStats { T max, sum; };

/// Stable softmax of one row of `n` values by a whole warp; returns the row's max and sum.
template <typename T> __device__ RowStats<T> softmaxRow(const T *x, T *out, int64_t n) {
  T mx = x[0];
  for (int64_t j = lane(); j < n; j += kWarp)
    mx = maxOf(mx, x[j]);
  mx = warpMax(mx);
  T sum = 0;
  for (int64_t j = lane(); j < n; j += kWarp)
    sum += out[j] = exp(x[j] - mx);
  sum = warpSum(sum);
  for (int64_t j = lane(); j < n; j += kWarp)
    out[j] /= sum;
  return {mx, sum};
}

/// Records row `r` as having a bad label; the host reports the first.
__device__ void flagRow(unsigned long long *flag, int64_t r) {
  atomicMin(flag, static_cast<unsigned long long>(r));
}

template <typename T> __global__ void softmaxRows(const T *x, T *out, int64_t rows, int64_t n) {
  for (int64_t r = firstRow(); r < rows; r += rowStep())
    softmaxRow(x + r * n, out + r * n, n);
}

// dX = Out * (dOut - sum(dOut * Out)) per row.
template <typename T>
__global__ void softmaxGradRows(const T *out, const T *dout, T *dx, int64_t rows, int64_t n) {
  for (int64_t r = firstRow(); r < rows; r += rowStep()) {
    const T *o = out + r * n, *d = dout + r * n;
    T dot = 0;
    for (int64_t j = lane(); j < n; j += kWarp)
      dot += d[j] * o[j];
    dot = warpSum(dot);
    for (int64_t j = lane(); j < n; j += kWarp)
      dx[r * n + j] = o[j] * (d[j] - dot);
  }
}

template <typename T>
__global__ void crossEntropyRows(const T *x, const int64_t *label, T *y, int64_t rows, int64_t c,
                                 unsigned long long *flag) {
  OAR_CUDA_LOOP(r, rows) {
    int64_t l = label[r];
    if (l < 0 || l >= c)
      flagRow(flag, r);
    else
      y[r] = -log(maxOf(x[r * c + l], T(1e-20)));
  }
}

// One thread per element of dX: zero except at each row's label.
template <typename T>
__global__ void crossEntropyGradElems(const T *x, const int64_t *label, const T *dy, T *dx,
                                      int64_t rows, int64_t c, unsigned long long *flag) {
  OAR_CUDA_LOOP(i, rows * c) {
    int64_t r = i / c, l = label[r];
    if (l < 0 || l >= c) {
      flagRow(flag, r);
      dx[i] = 0;
    } else {
      dx[i] = i - r * c == l ? -dy[r] / maxOf(x[i], T(1e-20)) : T(0);
    }
  }
}

template <typename T>
__global__ void softmaxCeRows(const T *x, const int64_t *label, T *sm, T *loss, int64_t rows,
                              int64_t c, unsigned long long *flag) {
  for (int64_t r = firstRow(); r < rows; r += rowStep()) {
    int64_t l = label[r];
    if (l < 0 || l >= c) {
      if (lane() == 0)
        flagRow(flag, r);
      continue;
    }
    const T *row = x + r * c;
    RowStats<T> s = softmaxRow(row, sm + r * c, c);
    if (lane() == 0)
      loss[r] = log(s.sum) - (row[l] - s.max); // log-sum-exp minus the label's logit
  }
}

template <typename T>
__global__ void softmaxCeGradElems(const T *sm, const int64_t *label, const T *dl, T *dx,
                                   int64_t rows, int64_t c, unsigned long long *flag) {
  OAR_CUDA_LOOP(i, rows * c) {
    int64_t r = i / c, l = label[r];
    if (l < 0 || l >= c)
      flagRow(flag, r);
    else
      dx[i] = (sm[i] - (i - r * c == l ? T(1) : T(0))) * dl[r];
  }
}

template <typename T>
__global__ void sigmoidCeElems(const T *x, const T *label, T *out, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = maxOf(x[i], T(0)) - x[i] * label[i] + log1p(exp(-fabs(x[i]))); }
}

template <typename T>
__global__ void sigmoidCeGradElems(const T *x, const T *label, const T *dout, T *dx, int64_t n) {
  OAR_CUDA_LOOP(i, n) { dx[i] = (T(1) / (T(1) + exp(-x[i])) - label[i]) * dout[i]; }
}

template <typename T> __global__ void squareErrorElems(const T *x, const T *y, T *out, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = (x[i] - y[i]) * (x[i] - y[i]); }
}

// dX or dY may be absent (nullptr): an unwanted gradient.
template <typename T>
__global__ void squareErrorGradElems(const T *x, const T *y, const T *dout, T *dx, T *dy,
                                     int64_t n) {
  OAR_CUDA_LOOP(i, n) {
    T g = 2 * (x[i] - y[i]) * dout[i];
    if (dx)
      dx[i] = g;
    if (dy)
      dy[i] = -g;
  }
}

/// After the launches: their error, or the CPU kernel's error for the first row whose label
/// is outside [0, classes). Reading the flag back waits for the stream, since the error must
/// come from this call.
llvm::Error labelsChecked(const KernelContext &ctx, const unsigned long long *flag, int64_t classes,
                          llvm::StringRef what) {
  if (auto err = launched(what))
    return err;
  auto bad = firstBadIndex(flag, what);
  if (!bad)
    return bad.takeError();
  if (!*bad)
    return llvm::Error::success();
  int64_t r = **bad, l = 0;
  if (auto err = copyToHost(&l, ctx.input("Label").data<int64_t>() + r, sizeof l, what))
    return err;
  return makeError("label {0} in row {1} is outside [0, {2})", l, r, classes);
}

llvm::Error noScratch(llvm::StringRef what) {
  return makeError("{0}: cannot allocate device scratch for the label check", what);
}

} // namespace

template <typename T> static llvm::Error softmax(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t n = x.dims().back(), rows = x.numel() / std::max<int64_t>(n, 1);
  OAR_CUDA_LAUNCH(softmaxRows<T>, rows * kWarp, x.data<T>(), ctx.output("Out").data<T>(), rows, n);
  return launched("softmax");
}
OAR_CUDA_FLOAT_KERNELS(softmax, softmax);

template <typename T> static llvm::Error softmaxGrad(KernelContext &ctx) {
  const Tensor &o = ctx.input("Out");
  int64_t n = o.dims().back(), rows = o.numel() / std::max<int64_t>(n, 1);
  OAR_CUDA_LAUNCH(softmaxGradRows<T>, rows * kWarp, o.data<T>(), ctx.input("Out@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), rows, n);
  return launched("softmax_grad");
}
OAR_CUDA_FLOAT_KERNELS(softmax_grad, softmaxGrad);

template <typename T> static llvm::Error crossEntropy(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t rows = x.dim(0), c = x.dim(1);
  unsigned long long *flag = badIndexFlag();
  if (!flag)
    return noScratch("cross_entropy");
  OAR_CUDA_LAUNCH(crossEntropyRows<T>, rows, x.data<T>(), ctx.input("Label").data<int64_t>(),
                  ctx.output("Y").data<T>(), rows, c, flag);
  return labelsChecked(ctx, flag, c, "cross_entropy");
}
OAR_CUDA_FLOAT_KERNELS(cross_entropy, crossEntropy);

template <typename T> static llvm::Error crossEntropyGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t rows = x.dim(0), c = x.dim(1);
  unsigned long long *flag = badIndexFlag();
  if (!flag)
    return noScratch("cross_entropy_grad");
  OAR_CUDA_LAUNCH(crossEntropyGradElems<T>, rows * c, x.data<T>(),
                  ctx.input("Label").data<int64_t>(), ctx.input("Y@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), rows, c, flag);
  return labelsChecked(ctx, flag, c, "cross_entropy_grad");
}
OAR_CUDA_FLOAT_KERNELS(cross_entropy_grad, crossEntropyGrad);

template <typename T> static llvm::Error softmaxCe(KernelContext &ctx) {
  const Tensor &x = ctx.input("Logits");
  int64_t rows = x.dim(0), c = x.dim(1);
  unsigned long long *flag = badIndexFlag();
  if (!flag)
    return noScratch("softmax_with_cross_entropy");
  OAR_CUDA_LAUNCH(softmaxCeRows<T>, rows * kWarp, x.data<T>(), ctx.input("Label").data<int64_t>(),
                  ctx.output("Softmax").data<T>(), ctx.output("Loss").data<T>(), rows, c, flag);
  return labelsChecked(ctx, flag, c, "softmax_with_cross_entropy");
}
OAR_CUDA_FLOAT_KERNELS(softmax_with_cross_entropy, softmaxCe);

template <typename T> static llvm::Error softmaxCeGrad(KernelContext &ctx) {
  const Tensor &s = ctx.input("Softmax");
  int64_t rows = s.dim(0), c = s.dim(1);
  unsigned long long *flag = badIndexFlag();
  if (!flag)
    return noScratch("softmax_with_cross_entropy_grad");
  OAR_CUDA_LAUNCH(softmaxCeGradElems<T>, rows * c, s.data<T>(), ctx.input("Label").data<int64_t>(),
                  ctx.input("Loss@GRAD").data<T>(), ctx.output("Logits@GRAD").data<T>(), rows, c,
                  flag);
  return labelsChecked(ctx, flag, c, "softmax_with_cross_entropy_grad");
}
OAR_CUDA_FLOAT_KERNELS(softmax_with_cross_entropy_grad, softmaxCeGrad);

template <typename T> static llvm::Error sigmoidCe(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(sigmoidCeElems<T>, x.numel(), x.data<T>(), ctx.input("Label").data<T>(),
                  ctx.output("Out").data<T>(), x.numel());
  return launched("sigmoid_cross_entropy_with_logits");
}
OAR_CUDA_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits, sigmoidCe);

template <typename T> static llvm::Error sigmoidCeGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(sigmoidCeGradElems<T>, x.numel(), x.data<T>(), ctx.input("Label").data<T>(),
                  ctx.input("Out@GRAD").data<T>(), ctx.output("X@GRAD").data<T>(), x.numel());
  return launched("sigmoid_cross_entropy_with_logits_grad");
}
OAR_CUDA_FLOAT_KERNELS(sigmoid_cross_entropy_with_logits_grad, sigmoidCeGrad);

template <typename T> static llvm::Error squareError(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(squareErrorElems<T>, x.numel(), x.data<T>(), ctx.input("Y").data<T>(),
                  ctx.output("Out").data<T>(), x.numel());
  return launched("square_error_cost");
}
OAR_CUDA_FLOAT_KERNELS(square_error_cost, squareError);

template <typename T> static llvm::Error squareErrorGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T *dx = ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr;
  T *dy = ctx.hasOutput("Y@GRAD") ? ctx.output("Y@GRAD").data<T>() : nullptr;
  OAR_CUDA_LAUNCH(squareErrorGradElems<T>, x.numel(), x.data<T>(), ctx.input("Y").data<T>(),
                  ctx.input("Out@GRAD").data<T>(), dx, dy, x.numel());
  return launched("square_error_cost_grad");
}
OAR_CUDA_FLOAT_KERNELS(square_error_cost_grad, squareErrorGrad);

} // namespace oar::cuda
