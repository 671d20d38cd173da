// CUDA kernels of elementwise_add/sub/mul and their gradients, with Paddle's axis broadcasting:
// X viewed as [pre, n, post] and Y as [n]. dY sums in the CPU kernel's order (one thread per
// entry of Y), so both devices give the same bits.
#include "kernels/cpu/cpu_util.h"
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

enum class Bin { Add, Sub, Mul };

template <Bin op, typename T> __device__ T apply(T a, T b) {
  return op == Bin::Add ? a + b : op == Bin::Sub ? a - b : a * b;
}

template <typename T, Bin op>
__global__ void forwardKernel(const T *x, const T *y, T *out, int64_t total, int64_t n,
                              int64_t post) {
  OAR_CUDA_LOOP(i, total) { out[i] = apply<op>(x[i], y[(i / post) % n]); }
}

template <typename T, Bin op>
__global__ void dxKernel(const T *dout, const T *y, T *dx, int64_t total, int64_t n,
                         int64_t post) {
  OAR_CUDA_LOOP(i, total) { dx[i] = op == Bin::Mul ? dout[i] * y[(i / post) % n] : dout[i]; }
}

template <typename T, Bin op>
__global__ void dyKernel(const T *dout, const T *x, T *dy, int64_t pre, int64_t n,
                         int64_t post) {
  OAR_CUDA_LOOP(j, n) {
    T sum = 0;
    for (int64_t i = 0; i < pre; ++i) {
      const int64_t base = (i * n + j) * post;
      if (post == 1) { // the CPU kernel's bias-add order: one term per row
        T g = dout[base];
        sum += op == Bin::Mul ? g * x[base] : op == Bin::Sub ? -g : g;
        continue;
      }
      T acc = 0;
      for (int64_t k = 0; k < post; ++k)
        acc += op == Bin::Mul ? dout[base + k] * x[base + k] : dout[base + k];
      sum += op == Bin::Sub ? -acc : acc;
    }
    dy[j] = sum;
  }
}

template <typename T, Bin op> static llvm::Error elementwise(KernelContext &ctx) {
  const Tensor &x = ctx.input("X"), &y = ctx.input("Y");
  cpu::BroadcastShape s = cpu::broadcastShape(x.dims(), y.dims(), ctx.attrs().getInt("axis"));
  OAR_CUDA_LAUNCH((forwardKernel<T, op>), x.numel(), x.data<T>(), y.data<T>(),
                  ctx.output("Out").data<T>(), x.numel(), s.n, s.post);
  return launched(ctx.op().type());
}

template <typename T, Bin op> static llvm::Error elementwiseGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X"), &y = ctx.input("Y");
  cpu::BroadcastShape s = cpu::broadcastShape(x.dims(), y.dims(), ctx.attrs().getInt("axis"));
  const T *dout = ctx.input("Out@GRAD").data<T>();
  if (ctx.hasOutput("X@GRAD"))
    OAR_CUDA_LAUNCH((dxKernel<T, op>), x.numel(), dout, y.data<T>(),
                    ctx.output("X@GRAD").data<T>(), x.numel(), s.n, s.post);
  if (ctx.hasOutput("Y@GRAD"))
    OAR_CUDA_LAUNCH((dyKernel<T, op>), s.n, dout, x.data<T>(), ctx.output("Y@GRAD").data<T>(),
                    s.pre, s.n, s.post);
  return launched(ctx.op().type());
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

OAR_CUDA_FLOAT_KERNELS(elementwise_add, add);
OAR_CUDA_FLOAT_KERNELS(elementwise_sub, sub);
OAR_CUDA_FLOAT_KERNELS(elementwise_mul, mul);
OAR_CUDA_FLOAT_KERNELS(elementwise_add_grad, addGrad);
OAR_CUDA_FLOAT_KERNELS(elementwise_sub_grad, subGrad);
OAR_CUDA_FLOAT_KERNELS(elementwise_mul_grad, mulGrad);

} // namespace oar::cuda
