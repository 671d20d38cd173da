// CPU kernels of log1p, bucketize and feature_key: the feeds' own functions, element by element.
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

OAR_CPU_FLOAT_KERNELS(log1p, log1pKernel);
OAR_CPU_FLOAT_KERNELS(log1p_grad, log1pGrad);
OAR_CPU_FLOAT_KERNELS(bucketize, bucketize);
OAR_KERNEL(feature_key, Device::Cpu, proto::I64, featureKey);

} // namespace oar::cpu
