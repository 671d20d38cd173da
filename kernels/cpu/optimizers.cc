// CPU kernels of sgd, momentum, adam, adamw, adagrad. All update in place. Selected-rows
// gradients and row-wise adagrad go to sparse_optimizers.cc. g below is Grad + weight_decay *
// Param (L2 decay; adamw decays Param itself instead), at the scheduled rate (update_rate.h).
#include <cmath>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/sparse_optimizers.h"
#include "kernels/cpu/update_rate.h"

namespace oar::cpu {

template <typename T> static llvm::Error sgd(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return sparseSgd(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = updateRate<T>(ctx), wd = coupledDecay<T>(ctx);
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>();
  T *out = ctx.output("ParamOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = p[i] - lr * (gv[i] + wd * p[i]);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sgd, sgd);

template <typename T> static llvm::Error momentum(KernelContext &ctx) {
  const Tensor &g = ctx.input("Grad");
  T lr = updateRate<T>(ctx), mu = ctx.attrs().getFloat("mu"), wd = coupledDecay<T>(ctx);
  bool nesterov = ctx.attrs().getBool("use_nesterov");
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>(),
          *v = ctx.input("Velocity").data<T>();
  T *pOut = ctx.output("ParamOut").data<T>(), *vOut = ctx.output("VelocityOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i) {
    T gi = gv[i] + wd * p[i];
    T nv = mu * v[i] + gi;
    vOut[i] = nv;
    pOut[i] = p[i] - lr * (nesterov ? gi + mu * nv : nv);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(momentum, momentum);

template <typename T> static llvm::Error adam(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return lazyAdam(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = updateRate<T>(ctx), wd = coupledDecay<T>(ctx);
  T decoupled = decoupledDecay<T>(ctx);
  T b1 = ctx.attrs().getFloat("beta1"), b2 = ctx.attrs().getFloat("beta2"),
    eps = ctx.attrs().getFloat("epsilon");
  T b1p = ctx.input("Beta1Pow").data<T>()[0], b2p = ctx.input("Beta2Pow").data<T>()[0];
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>();
  const T *m1 = ctx.input("Moment1").data<T>(), *m2 = ctx.input("Moment2").data<T>();
  T *pOut = ctx.output("ParamOut").data<T>(), *m1Out = ctx.output("Moment1Out").data<T>(),
    *m2Out = ctx.output("Moment2Out").data<T>();
  T lrT = lr * std::sqrt(T(1) - b2p) / (T(1) - b1p);
  T epsT = eps * std::sqrt(T(1) - b2p);
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i) {
    T pi = decoupled != T(0) ? p[i] * (T(1) - lr * decoupled) : p[i];
    T gi = gv[i] + wd * p[i];
    T nm1 = b1 * m1[i] + (T(1) - b1) * gi;
    T nm2 = b2 * m2[i] + (T(1) - b2) * gi * gi;
    m1Out[i] = nm1;
    m2Out[i] = nm2;
    pOut[i] = pi - lrT * nm1 / (std::sqrt(nm2) + epsT);
  }
  ctx.output("Beta1PowOut").data<T>()[0] = b1p * b1;
  ctx.output("Beta2PowOut").data<T>()[0] = b2p * b2;
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(adam, adam);
OAR_CPU_FLOAT_KERNELS(adamw, adam);

template <typename T> static llvm::Error adagrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("row_wise"))
    return rowWiseAdagrad(ctx);
  if (ctx.inputIsRows("Grad"))
    return sparseAdagrad(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = updateRate<T>(ctx), eps = ctx.attrs().getFloat("epsilon"), wd = coupledDecay<T>(ctx);
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>(), *m = ctx.input("Moment").data<T>();
  T *pOut = ctx.output("ParamOut").data<T>(), *mOut = ctx.output("MomentOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i) {
    T gi = gv[i] + wd * p[i];
    T nm = m[i] + gi * gi;
    mOut[i] = nm;
    pOut[i] = p[i] - lr * gi / (std::sqrt(nm) + eps);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(adagrad, adagrad);

} // namespace oar::cpu
