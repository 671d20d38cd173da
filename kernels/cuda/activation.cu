// CUDA kernels of relu, sigmoid, tanh and their gradients (computed from Out).
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

enum class Act { Relu, Sigmoid, Tanh };

template <Act act, typename T> __device__ T activate(T v) {
  if constexpr (act == Act::Relu)
    return v > T(0) ? v : T(0);
  else if constexpr (act == Act::Sigmoid)
    return T(1) / (T(1) + exp(-v));
  else
    return tanh(v);
}

// f'(x) written with Out = f(x).
template <Act act, typename T> __device__ T slopeFromOut(T o) {
  if constexpr (act == Act::Relu)
    return T(o > T(0));
  else if constexpr (act == Act::Sigmoid)
    return o * (T(1) - o);
  else
    return T(1) - o * o;
}

template <Act act, typename T> __global__ void forwardKernel(const T *x, T *out, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = activate<act>(x[i]); }
}

template <Act act, typename T>
__global__ void gradKernel(const T *out, const T *dout, T *dx, int64_t n) {
  OAR_CUDA_LOOP(i, n) { dx[i] = dout[i] * slopeFromOut<act>(out[i]); }
}

template <Act act, typename T> static llvm::Error forward(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH((forwardKernel<act, T>), x.numel(), x.data<T>(), ctx.output("Out").data<T>(),
                  x.numel());
  return launched(ctx.op().type());
}

template <Act act, typename T> static llvm::Error backward(KernelContext &ctx) {
  const Tensor &out = ctx.input("Out");
  OAR_CUDA_LAUNCH((gradKernel<act, T>), out.numel(), out.data<T>(),
                  ctx.input("Out@GRAD").data<T>(), ctx.output("X@GRAD").data<T>(), out.numel());
  return launched(ctx.op().type());
}

template <typename T> static llvm::Error relu(KernelContext &c) { return forward<Act::Relu, T>(c); }
template <typename T> static llvm::Error sigmoid(KernelContext &c) {
  return forward<Act::Sigmoid, T>(c);
}
template <typename T> static llvm::Error tanhKernel(KernelContext &c) {
  return forward<Act::Tanh, T>(c);
}
template <typename T> static llvm::Error reluGrad(KernelContext &c) {
  return backward<Act::Relu, T>(c);
}
template <typename T> static llvm::Error sigmoidGrad(KernelContext &c) {
  return backward<Act::Sigmoid, T>(c);
}
template <typename T> static llvm::Error tanhGrad(KernelContext &c) {
  return backward<Act::Tanh, T>(c);
}

OAR_CUDA_FLOAT_KERNELS(relu, relu);
OAR_CUDA_FLOAT_KERNELS(sigmoid, sigmoid);
OAR_CUDA_FLOAT_KERNELS(tanh, tanhKernel);
OAR_CUDA_FLOAT_KERNELS(relu_grad, reluGrad);
OAR_CUDA_FLOAT_KERNELS(sigmoid_grad, sigmoidGrad);
OAR_CUDA_FLOAT_KERNELS(tanh_grad, tanhGrad);

} // namespace oar::cuda
