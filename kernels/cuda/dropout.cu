// CUDA kernels of dropout and dropout_grad. The mask comes from kernels/dropout_mask.h, the CPU
// kernels' generator, so a step draws the same mask on either device.
#include "kernels/cuda/cuda_util.h"
#include "kernels/dropout_mask.h"

namespace oar::cuda {

namespace {

// Step (i64[1]) lives on the GPU, as every input of a GPU op does: it is read there, so no
// host round trip is needed.
template <typename T>
__global__ void dropoutKernel(const T *x, const int64_t *step, int64_t seed, int64_t trainer,
                              float p, T keptScale, T *out, T *mask, int64_t n) {
  const uint64_t draws = kernels::dropoutStream(seed, step[0], trainer);
  OAR_CUDA_LOOP(i, n) {
    const T m = kernels::dropoutKeeps(draws, i, p) ? keptScale : T(0);
    mask[i] = m;
    out[i] = x[i] * m;
  }
}

template <typename T> __global__ void identityKernel(const T *x, T *out, T *mask, int64_t n) {
  OAR_CUDA_LOOP(i, n) {
    out[i] = x[i];
    mask[i] = T(1);
  }
}

// Runs after the mask's kernel on the same stream (it reads Step): StepOut may be Step.
__global__ void stepKernel(const int64_t *step, int64_t advance, int64_t *stepOut) {
  stepOut[0] = step[0] + advance;
}

template <typename T>
__global__ void dropoutGradKernel(const T *mask, const T *dout, T *dx, int64_t n) {
  OAR_CUDA_LOOP(i, n) { dx[i] = dout[i] * mask[i]; }
}

} // namespace

template <typename T> static llvm::Error dropout(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T *out = ctx.output("Out").data<T>(), *mask = ctx.output("Mask").data<T>();
  const int64_t *step = ctx.input("Step").data<int64_t>();
  const bool isTest = ctx.attrs().getBool("is_test");
  if (isTest) {
    OAR_CUDA_LAUNCH(identityKernel<T>, x.numel(), x.data<T>(), out, mask, x.numel());
  } else {
    const float p = ctx.attrs().getFloat("dropout_prob");
    const T keptScale = T(1) / (T(1) - T(p));
    OAR_CUDA_LAUNCH(dropoutKernel<T>, x.numel(), x.data<T>(), step, ctx.attrs().getInt("seed"),
                    ctx.attrs().getInt("trainer_id"), p, keptScale, out, mask, x.numel());
  }
  stepKernel<<<1, 1, 0, stream()>>>(step, isTest ? 0 : 1, ctx.output("StepOut").data<int64_t>());
  return launched("dropout");
}
OAR_CUDA_FLOAT_KERNELS(dropout, dropout);

template <typename T> static llvm::Error dropoutGrad(KernelContext &ctx) {
  const Tensor &m = ctx.input("Mask");
  OAR_CUDA_LAUNCH(dropoutGradKernel<T>, m.numel(), m.data<T>(), ctx.input("Out@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), m.numel());
  return launched("dropout_grad");
}
OAR_CUDA_FLOAT_KERNELS(dropout_grad, dropoutGrad);

} // namespace oar::cuda
