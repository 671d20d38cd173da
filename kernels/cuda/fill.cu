// CUDA kernels of fill_constant, fill_zeros_like, uniform_random and gaussian_random. The random
// ones draw on the host with the CPU kernels' generator and copy the numbers over: a model
// initialised on the GPU starts from the same bits as on the CPU (startup runs once, so the
// copy costs nothing per step).
#include "kernels/cpu/random_fill.h"
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

template <typename T> __global__ void fillKernel(T *out, T value, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = value; }
}

template <typename T> static llvm::Error fillConstant(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  OAR_CUDA_LAUNCH(fillKernel<T>, out.numel(), out.data<T>(),
                  static_cast<T>(ctx.attrs().getFloat("value")), out.numel());
  return launched("fill_constant");
}
OAR_CUDA_ALL_KERNELS(fill_constant, fillConstant);

template <typename T> static llvm::Error fillZerosLike(KernelContext &ctx) {
  ctx.output("Out").setZero();
  return launched("fill_zeros_like");
}
OAR_CUDA_ALL_KERNELS(fill_zeros_like, fillZerosLike);

/// Fills a host tensor of Out's shape with `draw` and copies it into Out.
template <typename T, typename Draw>
static llvm::Error drawOnHost(KernelContext &ctx, Draw draw) {
  Tensor &out = ctx.output("Out");
  Tensor host(dtypeOf<T>(), out.dims());
  draw(host.data<T>(), host.numel());
  Tensor device = host.to(Device::Cuda);
  cudaMemcpyAsync(out.raw(), device.raw(), out.bytes(), cudaMemcpyDeviceToDevice, stream());
  return launched(ctx.op().type());
}

template <typename T> static llvm::Error uniformRandom(KernelContext &ctx) {
  return drawOnHost<T>(ctx, [&](T *o, int64_t n) {
    cpu::fillUniform(o, n, ctx.attrs().getInt("seed"), ctx.attrs().getFloat("min"),
                     ctx.attrs().getFloat("max"));
  });
}
OAR_CUDA_FLOAT_KERNELS(uniform_random, uniformRandom);

template <typename T> static llvm::Error gaussianRandom(KernelContext &ctx) {
  return drawOnHost<T>(ctx, [&](T *o, int64_t n) {
    cpu::fillGaussian(o, n, ctx.attrs().getInt("seed"), ctx.attrs().getFloat("mean"),
                      ctx.attrs().getFloat("std"));
  });
}
OAR_CUDA_FLOAT_KERNELS(gaussian_random, gaussianRandom);

} // namespace oar::cuda
