// CUDA kernels of sgd, momentum, adam, adamw, adagrad with the CPU kernels' arithmetic per
// element, L2 decay and schedule included. All update in place; LearningRate, Step and the beta
// powers live on the GPU and are read there. Selected-rows gradients go to sparse_optimizers.cu.
#include "kernels/cuda/cuda_util.h"
#include "kernels/cuda/sparse_optimizers.h"
#include "kernels/cuda/update_rate.cuh"

namespace oar::cuda {

template <typename T>
__global__ void sgdKernel(const T *p, const T *g, UpdateRate<T> rate, T wd, T *out, int64_t n) {
  const T lr = rate();
  OAR_CUDA_LOOP(i, n) { out[i] = p[i] - lr * (g[i] + wd * p[i]); }
}

template <typename T> static llvm::Error sgd(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return sgdRows<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  OAR_CUDA_LAUNCH(sgdKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  updateRate<T>(ctx), coupledDecay<T>(ctx), ctx.output("ParamOut").data<T>(),
                  g.numel());
  advanceStep<T>(ctx);
  return launched("sgd");
}
OAR_CUDA_FLOAT_KERNELS(sgd, sgd);

template <typename T>
__global__ void momentumKernel(const T *p, const T *g, const T *v, UpdateRate<T> rate, T mu, T wd,
                               bool nesterov, T *pOut, T *vOut, int64_t n) {
  const T lr = rate();
  OAR_CUDA_LOOP(i, n) {
    T gi = g[i] + wd * p[i];
    T nv = mu * v[i] + gi;
    vOut[i] = nv;
    pOut[i] = p[i] - lr * (nesterov ? gi + mu * nv : nv);
  }
}

template <typename T> static llvm::Error momentum(KernelContext &ctx) {
  const Tensor &g = ctx.input("Grad");
  T mu = ctx.attrs().getFloat("mu");
  OAR_CUDA_LAUNCH(momentumKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  ctx.input("Velocity").data<T>(), updateRate<T>(ctx), mu, coupledDecay<T>(ctx),
                  ctx.attrs().getBool("use_nesterov"), ctx.output("ParamOut").data<T>(),
                  ctx.output("VelocityOut").data<T>(), g.numel());
  advanceStep<T>(ctx);
  return launched("momentum");
}
OAR_CUDA_FLOAT_KERNELS(momentum, momentum);

namespace {
template <typename T> struct AdamArgs {
  const T *p, *g, *m1, *m2;
  UpdateRate<T> rate;
  const T *b1p, *b2p;
  T *pOut, *m1Out, *m2Out;
  T b1, b2, eps;
  T wd;        // L2 decay added to the gradient (adam)
  T decoupled; // decay of Param itself before the step (adamw)
};
} // namespace

template <typename T> __global__ void adamKernel(AdamArgs<T> a, int64_t n) {
  T b1p = a.b1p[0], b2p = a.b2p[0];
  T lr = a.rate();
  T lrT = lr * sqrt(T(1) - b2p) / (T(1) - b1p);
  T epsT = a.eps * sqrt(T(1) - b2p);
  OAR_CUDA_LOOP(i, n) {
    T p = a.decoupled != T(0) ? a.p[i] * (T(1) - lr * a.decoupled) : a.p[i];
    T g = a.g[i] + a.wd * a.p[i];
    T nm1 = a.b1 * a.m1[i] + (T(1) - a.b1) * g;
    T nm2 = a.b2 * a.m2[i] + (T(1) - a.b2) * g * g;
    a.m1Out[i] = nm1;
    a.m2Out[i] = nm2;
    a.pOut[i] = p - lrT * nm1 / (sqrt(nm2) + epsT);
  }
}

// Runs after adamKernel on the same stream: the outputs may be the inputs it read.
template <typename T>
__global__ void betaPowKernel(const T *b1p, const T *b2p, T b1, T b2, T *b1pOut, T *b2pOut) {
  T n1 = b1p[0] * b1, n2 = b2p[0] * b2;
  b1pOut[0] = n1;
  b2pOut[0] = n2;
}

// adam and adamw (decoupled decay: Param shrinks by lr * weight_decay before the step).
template <typename T> static llvm::Error adam(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return lazyAdam<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  T decoupled = decoupledDecay<T>(ctx);
  AdamArgs<T> a{ctx.input("Param").data<T>(),
                g.data<T>(),
                ctx.input("Moment1").data<T>(),
                ctx.input("Moment2").data<T>(),
                updateRate<T>(ctx),
                ctx.input("Beta1Pow").data<T>(),
                ctx.input("Beta2Pow").data<T>(),
                ctx.output("ParamOut").data<T>(),
                ctx.output("Moment1Out").data<T>(),
                ctx.output("Moment2Out").data<T>(),
                T(ctx.attrs().getFloat("beta1")),
                T(ctx.attrs().getFloat("beta2")),
                T(ctx.attrs().getFloat("epsilon")),
                coupledDecay<T>(ctx),
                decoupled};
  OAR_CUDA_LAUNCH(adamKernel<T>, g.numel(), a, g.numel());
  betaPowKernel<T><<<1, 1, 0, stream()>>>(a.b1p, a.b2p, a.b1, a.b2,
                                          ctx.output("Beta1PowOut").data<T>(),
                                          ctx.output("Beta2PowOut").data<T>());
  advanceStep<T>(ctx);
  return launched(ctx.op().type());
}
OAR_CUDA_FLOAT_KERNELS(adam, adam);
OAR_CUDA_FLOAT_KERNELS(adamw, adam);

template <typename T>
__global__ void adagradKernel(const T *p, const T *g, const T *m, UpdateRate<T> rate, T eps, T wd,
                              T *pOut, T *mOut, int64_t n) {
  const T lr = rate();
  OAR_CUDA_LOOP(i, n) {
    T gi = g[i] + wd * p[i];
    T nm = m[i] + gi * gi;
    mOut[i] = nm;
    pOut[i] = p[i] - lr * gi / (sqrt(nm) + eps);
  }
}

template <typename T> static llvm::Error adagrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("row_wise"))
    return rowWiseAdagrad<T>(ctx);
  if (ctx.inputIsRows("Grad"))
    return adagradRows<T>(ctx);
  const Tensor &g = ctx.input("Grad");
  OAR_CUDA_LAUNCH(adagradKernel<T>, g.numel(), ctx.input("Param").data<T>(), g.data<T>(),
                  ctx.input("Moment").data<T>(), updateRate<T>(ctx),
                  T(ctx.attrs().getFloat("epsilon")), coupledDecay<T>(ctx),
                  ctx.output("ParamOut").data<T>(), ctx.output("MomentOut").data<T>(), g.numel());
  advanceStep<T>(ctx);
  return launched("adagrad");
}
OAR_CUDA_FLOAT_KERNELS(adagrad, adagrad);

} // namespace oar::cuda
