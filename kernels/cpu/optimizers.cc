// CPU kernels of sgd, momentum, adam, adagrad. All update in place. Selected-rows gradients and
// row-wise adagrad go to sparse_optimizers.cc.
#include <cmath>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/sparse_optimizers.h"

namespace oar::cpu {

template <typename T> static llvm::Error sgd(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return sparseSgd(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = ctx.input("LearningRate").data<T>()[0];
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>();
  T *out = ctx.output("ParamOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = p[i] - lr * gv[i];
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sgd, sgd);

template <typename T> static llvm::Error momentum(KernelContext &ctx) {
  const Tensor &g = ctx.input("Grad");
  T lr = ctx.input("LearningRate").data<T>()[0], mu = ctx.attrs().getFloat("mu");
  bool nesterov = ctx.attrs().getBool("use_nesterov");
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>(),
          *v = ctx.input("Velocity").data<T>();
  T *pOut = ctx.output("ParamOut").data<T>(), *vOut = ctx.output("VelocityOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i) {
    T nv = mu * v[i] + gv[i];
    vOut[i] = nv;
    pOut[i] = p[i] - lr * (nesterov ? gv[i] + mu * nv : nv);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(momentum, momentum);

template <typename T> static llvm::Error adam(KernelContext &ctx) {
  if (ctx.inputIsRows("Grad"))
    return lazyAdam(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = ctx.input("LearningRate").data<T>()[0];
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
    T nm1 = b1 * m1[i] + (T(1) - b1) * gv[i];
    T nm2 = b2 * m2[i] + (T(1) - b2) * gv[i] * gv[i];
    m1Out[i] = nm1;
    m2Out[i] = nm2;
    pOut[i] = p[i] - lrT * nm1 / (std::sqrt(nm2) + epsT);
  }
  ctx.output("Beta1PowOut").data<T>()[0] = b1p * b1;
  ctx.output("Beta2PowOut").data<T>()[0] = b2p * b2;
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(adam, adam);

template <typename T> static llvm::Error adagrad(KernelContext &ctx) {
  if (ctx.attrs().getBool("row_wise"))
    return rowWiseAdagrad(ctx);
  if (ctx.inputIsRows("Grad"))
    return sparseAdagrad(ctx);
  const Tensor &g = ctx.input("Grad");
  T lr = ctx.input("LearningRate").data<T>()[0], eps = ctx.attrs().getFloat("epsilon");
  const T *p = ctx.input("Param").data<T>(), *gv = g.data<T>(), *m = ctx.input("Moment").data<T>();
  T *pOut = ctx.output("ParamOut").data<T>(), *mOut = ctx.output("MomentOut").data<T>();
  const int64_t n = g.numel();
  for (int64_t i = 0; i < n; ++i) {
    T nm = m[i] + gv[i] * gv[i];
    mOut[i] = nm;
    pOut[i] = p[i] - lr * gv[i] / (std::sqrt(nm) + eps);
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(adagrad, adagrad);

} // namespace oar::cpu
