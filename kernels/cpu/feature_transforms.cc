// CPU kernels of log1p, bucketize, feature_key and feature_cross: the feeds' own functions, element by element.
#include <cmath>

#include "feed/feature_key.h"
#include "feed/transforms.h"
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error log1pKernel(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *in = x.data<T>();
  T *out = ctx.output("Out").data<T>();
  for (int64_t i = 0; i < x.numel(); ++i)
    out[i] = static_cast<T>(signedLog1p(in[i]));
  return llvm::Error::success();
}

template <typename T> static llvm::Error log1pGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const T *in = x.data<T>(), *dout = ctx.input("Out@GRAD").data<T>();
  T *dx = ctx.output("X@GRAD").data<T>();
  for (int64_t i = 0; i < x.numel(); ++i)
    dx[i] = dout[i] / (T(1) + std::abs(in[i]));
  return llvm::Error::success();
}

template <typename T> static llvm::Error bucketize(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  std::vector<float> boundaries = ctx.attrs().getFloats("boundaries");
  const T *in = x.data<T>();
  int64_t *out = ctx.output("Out").data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (std::isnan(in[i]))
      return makeError("{0}: X at position {1} is NaN; it has no bucket", ctx.describeInput("X"),
                       i);
    out[i] = bucketOf(boundaries, in[i]);
  }
  return llvm::Error::success();
}

static llvm::Error featureKey(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  uint64_t column = columnHash(ctx.attrs().getString("column"));
  const int64_t *in = x.data<int64_t>();
  int64_t *out = ctx.output("Out").data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i)
    out[i] = static_cast<int64_t>(integerKeyFrom(column, in[i]));
  return llvm::Error::success();
}

static llvm::Error featureCross(KernelContext &ctx) {
  size_t n = ctx.inputCount("X");
  Tensor &out = ctx.output("Out");
  int64_t rows = out.dims()[0], width = out.dims()[1];
  std::vector<const int64_t *> in(n);
  std::vector<int64_t> widths(n);
  for (size_t i = 0; i < n; ++i) {
    const Tensor &x = ctx.input("X", i);
    if (x.dims()[0] != rows || (x.dims()[1] != 1 && x.dims()[1] != width))
      return makeError("{0}: {1} rows of {2} keys; the cross has {3} rows of {4}",
                       ctx.describeInput("X"), x.dims()[0], x.dims()[1], rows, width);
    in[i] = x.data<int64_t>(), widths[i] = x.dims()[1];
  }
  uint64_t column = columnHash(ctx.attrs().getString("column"));
  int64_t *o = out.data<int64_t>();
  llvm::SmallVector<uint64_t, 8> keys(n);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < width; ++k) {
      for (size_t i = 0; i < n; ++i)
        keys[i] = static_cast<uint64_t>(in[i][r * widths[i] + (widths[i] == 1 ? 0 : k)]);
      o[r * width + k] = static_cast<int64_t>(crossKeyFrom(column, keys));
    }
  return llvm::Error::success();
}

OAR_CPU_FLOAT_KERNELS(log1p, log1pKernel);
OAR_CPU_FLOAT_KERNELS(log1p_grad, log1pGrad);
OAR_CPU_FLOAT_KERNELS(bucketize, bucketize);
OAR_KERNEL(feature_key, Device::Cpu, proto::I64, featureKey);
OAR_KERNEL(feature_cross, Device::Cpu, proto::I64, featureCross);

} // namespace oar::cpu
