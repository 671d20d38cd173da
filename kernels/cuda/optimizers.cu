// CUDA kernels of sgd, momentum, adam, adagrad with the CPU kernels' arithmetic per element.
// All update in place. The learning rate and Adam's beta powers are tensors on the GPU, so the
// kernels read them there. Selected-rows gradients go to sparse_optimizers.cu.
#include "kernels/cuda/cuda_util.h"
#include "kernels/cuda/sparse_optimizers.h"

namespace oar::cuda {

template <typename T>
__global__ void sgdKernel(const T *p, const T *g, const T *lr, T *out, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = p[i] - lr[0] * g[i]; }
}

template <typename T> static llvm::Error sgd(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return sgdRows<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  OAR_CUDA_LAUNCH(sgdKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  ctx.input("LearningRate").data<T>(), ctx.output("ParamOut").data<T>(),
                  g.numel());
  return launched("sgd");
}
OAR_CUDA_FLOAT_KERNELS(sgd, sgd);

template <typename T>
__global__ void momentumKernel(const T *p, const T *g, const T *v, const T *lrAt, T mu,
                               bool nesterov, T *pOut, T *vOut, int64_t n) {
  OAR_CUDA_LOOP(i, n) {
    T lr = lrAt[0];
    T nv = mu * v[i] + g[i];
    vOut[i] = nv;
    pOut[i] = p[i] - lr * (nesterov ? g[i] + mu * nv : nv);
  }
}

template <typename T> static llvm::Error momentum(KernelContext &ctx) {
  const Tensor &g = ctx.input("Grad");
  T mu = ctx.attrs().getFloat("mu");
  OAR_CUDA_LAUNCH(momentumKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  ctx.input("Velocity").data<T>(), ctx.input("LearningRate").data<T>(), mu,
                  ctx.attrs().getBool("use_nesterov"), ctx.output("ParamOut").data<T>(),
                  ctx.output("VelocityOut").data<T>(), g.numel());
  return launched("momentum");
}
OAR_CUDA_FLOAT_KERNELS(momentum, momentum);

template <typename T> struct AdamArgs {
  const T *p, *g, *m1, *m2, *lr, *b1p, *b2p;
  T *pOut, *m1Out, *m2Out;
  T b1, b2, eps;
};

template <typename T> __global__ void adamKernel(AdamArgs<T> a, int64_t n) {
  T b1p = a.b1p[0], b2p = a.b2p[0];
  T lrT = a.lr[0] * sqrt(T(1) - b2p) / (T(1) - b1p);
  T epsT = a.eps * sqrt(T(1) - b2p);
  OAR_CUDA_LOOP(i, n) {
    T g = a.g[i];
    T nm1 = a.b1 * a.m1[i] + (T(1) - a.b1) * g;
    T nm2 = a.b2 * a.m2[i] + (T(1) - a.b2) * g * g;
    a.m1Out[i] = nm1;
    a.m2Out[i] = nm2;
    a.pOut[i] = a.p[i] - lrT * nm1 / (sqrt(nm2) + epsT);
  }
}

// Runs after adamKernel on the same stream: the outputs may be the inputs it read.
template <typename T>
__global__ void betaPowKernel(const T *b1p, const T *b2p, T b1, T b2, T *b1pOut, T *b2pOut) {
  T n1 = b1p[0] * b1, n2 = b2p[0] * b2;
  b1pOut[0] = n1;
  b2pOut[0] = n2;
}

template <typename T> static llvm::Error adam(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return lazyAdam<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  AdamArgs<T> a{ctx.input("Param").data<T>(),      g.data<T>(),
                ctx.input("Moment1").data<T>(),    ctx.input("Moment2").data<T>(),
                ctx.input("LearningRate").data<T>(), ctx.input("Beta1Pow").data<T>(),
                ctx.input("Beta2Pow").data<T>(),   ctx.output("ParamOut").data<T>(),
                ctx.output("Moment1Out").data<T>(), ctx.output("Moment2Out").data<T>(),
                T(ctx.attrs().getFloat("beta1")),  T(ctx.attrs().getFloat("beta2")),
                T(ctx.attrs().getFloat("epsilon"))};
  OAR_CUDA_LAUNCH(adamKernel<T>, g.numel(), a, g.numel());
  betaPowKernel<T><<<1, 1, 0, stream()>>>(a.b1p, a.b2p, a.b1, a.b2,
                                          ctx.output("Beta1PowOut").data<T>(),
                                          ctx.output("Beta2PowOut").data<T>());
  return launched("adam");
}
OAR_CUDA_FLOAT_KERNELS(adam, adam);

template <typename T>
__global__ void adagradKernel(const T *p, const T *g, const T *m, const T *lrAt, T eps, T *pOut,
                              T *mOut, int64_t n) {
  OAR_CUDA_LOOP(i, n) {
    T lr = lrAt[0];
    T nm = m[i] + g[i] * g[i];
    mOut[i] = nm;
    pOut[i] = p[i] - lr * g[i] / (sqrt(nm) + eps);
  }
}

template <typename T> static llvm::Error adagrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("row_wise"))
    return rowWiseAdagrad<T>(ctx);
  if (ctx.inputIsRows("Grad"))
    return adagradRows<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  OAR_CUDA_LAUNCH(adagradKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  ctx.input("Moment").data<T>(), ctx.input("LearningRate").data<T>(),
                  T(ctx.attrs().getFloat("epsilon")), ctx.output("ParamOut").data<T>(),
                  ctx.output("MomentOut").data<T>(), g.numel());
  return launched("adagrad");
}
OAR_CUDA_FLOAT_KERNELS(adagrad, adagrad);

} // namespace oar::cuda
