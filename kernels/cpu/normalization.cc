// CPU kernels of batch_norm, layer_norm and their gradients. Sums run in double: a batch's
// statistics over thousands of rows keep their digits, whatever T is.
#include <cmath>
#include <vector>

#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

/// X as [n, channels, inner]: batch_norm's statistics run over n and inner.
struct ChannelShape {
  int64_t n, channels, inner;
  int64_t count() const { return n * inner; }
  int64_t at(int64_t b, int64_t c, int64_t k) const { return (b * channels + c) * inner + k; }
};
static ChannelShape channelShape(const Tensor &x) {
  int64_t inner = 1;
  for (size_t d = 2; d < x.rank(); ++d)
    inner *= x.dim(d);
  return {x.dim(0), x.dim(1), inner};
}

template <typename T> static llvm::Error batchNorm(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X");
  ChannelShape s = channelShape(xt);
  const T *x = xt.data<T>(), *scale = ctx.input("Scale").data<T>(),
          *bias = ctx.input("Bias").data<T>();
  // Copied: MeanOut and VarianceOut are normally the same vars as Mean and Variance.
  std::vector<T> running(ctx.input("Mean").data<T>(), ctx.input("Mean").data<T>() + s.channels);
  std::vector<T> runningVar(ctx.input("Variance").data<T>(),
                            ctx.input("Variance").data<T>() + s.channels);
  T *y = ctx.output("Y").data<T>(), *meanOut = ctx.output("MeanOut").data<T>(),
    *varOut = ctx.output("VarianceOut").data<T>(), *saved = ctx.output("SavedMean").data<T>(),
    *savedInv = ctx.output("SavedInvStd").data<T>();
  const double eps = ctx.attrs().getFloat("epsilon"), momentum = ctx.attrs().getFloat("momentum");
  const bool isTest = ctx.attrs().getBool("is_test");
  const int64_t count = s.count();
  for (int64_t c = 0; c < s.channels; ++c) {
    double mean = running[c], var = runningVar[c];
    if (!isTest) {
      double sum = 0, sq = 0;
      for (int64_t b = 0; b < s.n; ++b)
        for (int64_t k = 0; k < s.inner; ++k)
          sum += x[s.at(b, c, k)];
      mean = sum / double(count);
      for (int64_t b = 0; b < s.n; ++b)
        for (int64_t k = 0; k < s.inner; ++k) {
          double d = x[s.at(b, c, k)] - mean;
          sq += d * d;
        }
      var = sq / double(count);
      double unbiased = count > 1 ? sq / double(count - 1) : var;
      meanOut[c] = T(momentum * running[c] + (1 - momentum) * mean);
      varOut[c] = T(momentum * runningVar[c] + (1 - momentum) * unbiased);
    } else {
      meanOut[c] = running[c];
      varOut[c] = runningVar[c];
    }
    double inv = 1 / std::sqrt(var + eps);
    saved[c] = T(mean);
    savedInv[c] = T(inv);
    for (int64_t b = 0; b < s.n; ++b)
      for (int64_t k = 0; k < s.inner; ++k) {
        int64_t i = s.at(b, c, k);
        y[i] = T((x[i] - mean) * inv * scale[c] + bias[c]);
      }
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(batch_norm, batchNorm);

// With xhat = (x - mean) * inv and M elements a channel: dBias = sum dy, dScale = sum dy * xhat,
// dX = scale * inv / M * (M * dy - dBias - xhat * dScale).
template <typename T> static llvm::Error batchNormGrad(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X");
  ChannelShape s = channelShape(xt);
  const T *x = xt.data<T>(), *scale = ctx.input("Scale").data<T>(),
          *mean = ctx.input("SavedMean").data<T>(), *inv = ctx.input("SavedInvStd").data<T>(),
          *dy = ctx.input("Y@GRAD").data<T>();
  T *dx = ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr;
  T *dScale = ctx.hasOutput("Scale@GRAD") ? ctx.output("Scale@GRAD").data<T>() : nullptr;
  T *dBias = ctx.hasOutput("Bias@GRAD") ? ctx.output("Bias@GRAD").data<T>() : nullptr;
  const double count = double(s.count());
  for (int64_t c = 0; c < s.channels; ++c) {
    double sumDy = 0, sumDyXhat = 0;
    for (int64_t b = 0; b < s.n; ++b)
      for (int64_t k = 0; k < s.inner; ++k) {
        int64_t i = s.at(b, c, k);
        sumDy += dy[i];
        sumDyXhat += dy[i] * (x[i] - mean[c]) * inv[c];
      }
    if (dBias)
      dBias[c] = T(sumDy);
    if (dScale)
      dScale[c] = T(sumDyXhat);
    if (!dx)
      continue;
    double k0 = double(scale[c]) * inv[c] / count;
    for (int64_t b = 0; b < s.n; ++b)
      for (int64_t k = 0; k < s.inner; ++k) {
        int64_t i = s.at(b, c, k);
        double xhat = (x[i] - mean[c]) * double(inv[c]);
        dx[i] = T(k0 * (count * dy[i] - sumDy - xhat * sumDyXhat));
      }
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(batch_norm_grad, batchNormGrad);

template <typename T> static llvm::Error layerNorm(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X");
  const int64_t width = xt.dim(xt.rank() - 1), rows = xt.numel() / std::max<int64_t>(width, 1);
  const T *x = xt.data<T>(), *scale = ctx.input("Scale").data<T>(),
          *bias = ctx.input("Bias").data<T>();
  T *y = ctx.output("Y").data<T>(), *meanOut = ctx.output("Mean").data<T>(),
    *invOut = ctx.output("InvStd").data<T>();
  const double eps = ctx.attrs().getFloat("epsilon");
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * width;
    double sum = 0, sq = 0;
    for (int64_t j = 0; j < width; ++j)
      sum += xr[j];
    double mean = sum / double(width);
    for (int64_t j = 0; j < width; ++j)
      sq += (xr[j] - mean) * (xr[j] - mean);
    double inv = 1 / std::sqrt(sq / double(width) + eps);
    meanOut[r] = T(mean);
    invOut[r] = T(inv);
    for (int64_t j = 0; j < width; ++j)
      y[r * width + j] = T((xr[j] - mean) * inv * scale[j] + bias[j]);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(layer_norm, layerNorm);

// Per row, with g = dy * scale and D features: dX = inv * (g - mean(g) - xhat * mean(g * xhat));
// over rows, dScale = sum dy * xhat and dBias = sum dy.
template <typename T> static llvm::Error layerNormGrad(KernelContext &ctx) {
  const Tensor &xt = ctx.input("X");
  const int64_t width = xt.dim(xt.rank() - 1), rows = xt.numel() / std::max<int64_t>(width, 1);
  const T *x = xt.data<T>(), *scale = ctx.input("Scale").data<T>(),
          *mean = ctx.input("Mean").data<T>(), *inv = ctx.input("InvStd").data<T>(),
          *dy = ctx.input("Y@GRAD").data<T>();
  T *dx = ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr;
  std::vector<double> dScale(width, 0), dBias(width, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const T *xr = x + r * width, *dyr = dy + r * width;
    double sumG = 0, sumGXhat = 0;
    for (int64_t j = 0; j < width; ++j) {
      double xhat = (xr[j] - mean[r]) * double(inv[r]);
      double g = double(dyr[j]) * scale[j];
      sumG += g;
      sumGXhat += g * xhat;
      dScale[j] += dyr[j] * xhat;
      dBias[j] += dyr[j];
    }
    if (!dx)
      continue;
    for (int64_t j = 0; j < width; ++j) {
      double xhat = (xr[j] - mean[r]) * double(inv[r]);
      double g = double(dyr[j]) * scale[j];
      dx[r * width + j] = T(inv[r] * (g - sumG / double(width) - xhat * sumGXhat / double(width)));
    }
  }
  if (ctx.hasOutput("Scale@GRAD"))
    for (int64_t j = 0; j < width; ++j)
      ctx.output("Scale@GRAD").data<T>()[j] = T(dScale[j]);
  if (ctx.hasOutput("Bias@GRAD"))
    for (int64_t j = 0; j < width; ++j)
      ctx.output("Bias@GRAD").data<T>()[j] = T(dBias[j]);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(layer_norm_grad, layerNormGrad);

} // namespace oar::cpu
