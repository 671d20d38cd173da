// CUDA updates of only the rows a gradient touches. The arithmetic per element, decay and
// schedule included, is that of the CPU's sparse_optimizers.cc: a row gets the same bits there.
#include "kernels/cuda/sparse_optimizers.h"
#include "kernels/cuda/update_rate.cuh"
#include "kernels/kernel_shapes.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "kernels/cuda/cuda_util.h"
#include "support/error.h"
#include "llvm/ADT/DenseMap.h"

namespace oar::cuda {

// Products nvcc may not fuse into an FMA with the add or subtract after them: the CPU (x86-64
// without -mfma) rounds each product, so fused ones would change the last bits.
__device__ inline float mulRn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mulRn(double a, double b) { return __dmul_rn(a, b); }

namespace {
/// The gradient rows an update applies, each id once, as device pointers. A selected-rows Grad
/// is merged on the fly: distinct row k sums the Grad rows positions[offsets[k]..offsets[k+1])
/// in their order, as mergeRows() does.
template <typename T> struct TouchedRows {
  const int64_t *ids = nullptr; // nullptr: every row in order (a dense Grad)
  const int64_t *offsets = nullptr, *positions = nullptr;
  const T *values = nullptr;
  int64_t count = 0, width = 1;
  __device__ int64_t id(int64_t k) const { return ids ? ids[k] : k; }
  __device__ T grad(int64_t k, int64_t j) const {
    if (!ids)
      return values[k * width + j];
    int64_t q = offsets[k];
    T sum = values[positions[q] * width + j]; // the first is copied, the rest added
    for (++q; q < offsets[k + 1]; ++q)
      sum += values[positions[q] * width + j];
    return sum;
  }
};

} // namespace

template <typename T> static llvm::Error touchedRows(KernelContext &ctx, TouchedRows<T> &out) {
  const Tensor &param = ctx.input("Param");
  out.width = rowWidth(param);
  if (!ctx.inputIsRows("Grad")) {
    out.count = param.rank() ? param.dim(0) : 1;
    out.values = ctx.input("Grad").data<T>();
    return llvm::Error::success();
  }
  // Shape inference checked the height and width against Param; the ids (host data) are
  // checked here.
  const SelectedRows &grad = ctx.inputRows("Grad");
  if (llvm::Error err = checkRows(grad, ctx.describeInput("Grad")))
    return err;
  // Distinct ids in order of first appearance, and each one's positions in grad, packed as
  // [ids, offsets, positions] for a single copy to the device.
  const int64_t n = static_cast<int64_t>(grad.rows.size());
  llvm::DenseMap<int64_t, int64_t> slot; // id -> its distinct index
  std::vector<int64_t> ids, rowOf(n);
  for (int64_t i = 0; i < n; ++i) {
    auto [it, fresh] = slot.try_emplace(grad.rows[i], static_cast<int64_t>(ids.size()));
    if (fresh)
      ids.push_back(grad.rows[i]);
    rowOf[i] = it->second;
  }
  const int64_t u = static_cast<int64_t>(ids.size());
  std::vector<int64_t> packed(2 * u + 1 + n, 0);
  int64_t *offsets = packed.data() + u, *positions = offsets + u + 1;
  std::copy(ids.begin(), ids.end(), packed.begin());
  for (int64_t i = 0; i < n; ++i)
    ++offsets[rowOf[i] + 1];
  for (int64_t k = 0; k < u; ++k)
    offsets[k + 1] += offsets[k];
  std::vector<int64_t> fill(offsets, offsets + u);
  for (int64_t i = 0; i < n; ++i)
    positions[fill[rowOf[i]]++] = i;
  out.count = u;
  if (u == 0)
    return llvm::Error::success();
  const int64_t *dev = idsOnDevice(packed.data(), static_cast<int64_t>(packed.size()));
  if (!dev)
    return makeError("{0}: no device memory for {1} row ids", ctx.describeInput("Grad"), n);
  out.ids = dev;
  out.offsets = dev + u;
  out.positions = dev + 2 * u + 1;
  out.values = grad.values.template data<T>();
  return llvm::Error::success();
}

/// Each output gets its input's values first when they are separate vars (the rows not touched
/// keep them); the kernels then update the outputs in place.
static llvm::Error keepUntouched(KernelContext &ctx,
                                 std::initializer_list<std::pair<const char *, const char *>> io) {
  for (auto [in, out] : io) {
    const Tensor &src = ctx.input(in);
    Tensor &dst = ctx.output(out);
    if (dst.raw() == src.raw() || src.bytes() == 0)
      continue;
    if (llvm::Error err = check(
            cudaMemcpyAsync(dst.raw(), src.raw(), src.bytes(), cudaMemcpyDeviceToDevice, stream()),
            ctx.op().type()))
      return err;
  }
  return llvm::Error::success();
}

// The kernels run one thread per (touched row k, column j) unless noted; the rate is read on
// the device (LearningRate and Step live there). wd is the L2 decay: a row's gradient is
// g + wd * p, p as it was before this update.

template <typename T>
__global__ void sgdKernel(TouchedRows<T> g, UpdateRate<T> rate, T wd, T *p, int64_t total) {
  const T lr = rate();
  OAR_CUDA_LOOP(e, total) {
    const int64_t k = e / g.width, j = e % g.width, at = g.id(k) * g.width + j;
    p[at] = p[at] - mulRn(lr, g.grad(k, j) + mulRn(wd, p[at]));
  }
}

template <typename T> llvm::Error sgdRows(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  if (llvm::Error err = keepUntouched(ctx, {{"Param", "ParamOut"}}))
    return err;
  T *p = ctx.output("ParamOut").data<T>();
  if (g.count * g.width > 0)
    OAR_CUDA_LAUNCH(sgdKernel<T>, g.count * g.width, g, updateRate<T>(ctx), coupledDecay<T>(ctx), p,
                    g.count * g.width);
  advanceStep<T>(ctx);
  return launched("sgd");
}

template <typename T>
__global__ void adagradKernel(TouchedRows<T> g, UpdateRate<T> rate, T eps, T wd, T *p, T *m,
                              int64_t total) {
  const T lr = rate();
  OAR_CUDA_LOOP(e, total) {
    const int64_t k = e / g.width, j = e % g.width, at = g.id(k) * g.width + j;
    const T gr = g.grad(k, j) + mulRn(wd, p[at]);
    T nm = m[at] + mulRn(gr, gr);
    m[at] = nm;
    p[at] = p[at] - mulRn(lr, gr) / (sqrt(nm) + eps);
  }
}

template <typename T> llvm::Error adagradRows(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T eps = ctx.attrs().getFloat("epsilon");
  if (llvm::Error err = keepUntouched(ctx, {{"Param", "ParamOut"}, {"Moment", "MomentOut"}}))
    return err;
  T *p = ctx.output("ParamOut").data<T>(), *m = ctx.output("MomentOut").data<T>();
  if (g.count * g.width > 0)
    OAR_CUDA_LAUNCH(adagradKernel<T>, g.count * g.width, g, updateRate<T>(ctx), eps,
                    coupledDecay<T>(ctx), p, m, g.count * g.width);
  advanceStep<T>(ctx);
  return launched("adagrad");
}

/// One thread per touched row: s[r] += mean(g[r]^2), the squares added in column order.
template <typename T>
__global__ void rowWiseMomentKernel(TouchedRows<T> g, T wd, const T *p, T *m) {
  OAR_CUDA_LOOP(k, g.count) {
    const int64_t r = g.id(k);
    T squares = 0;
    for (int64_t j = 0; j < g.width; ++j) {
      const T gr = g.grad(k, j) + mulRn(wd, p[r * g.width + j]);
      squares += mulRn(gr, gr);
    }
    m[r] = m[r] + (g.width ? squares / T(g.width) : T(0));
  }
}

/// After rowWiseMomentKernel (which reads p as it was): p[r] -= lr * g[r] / (sqrt(s[r]) + eps).
template <typename T>
__global__ void rowWiseParamKernel(TouchedRows<T> g, UpdateRate<T> rate, T eps, T wd, const T *m,
                                   T *p, int64_t total) {
  const T lr = rate();
  OAR_CUDA_LOOP(e, total) {
    const int64_t k = e / g.width, j = e % g.width, r = g.id(k), at = r * g.width + j;
    const T denom = sqrt(m[r]) + eps;
    p[at] = p[at] - mulRn(lr, g.grad(k, j) + mulRn(wd, p[at])) / denom;
  }
}

template <typename T> llvm::Error rowWiseAdagrad(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T eps = ctx.attrs().getFloat("epsilon");
  if (llvm::Error err = keepUntouched(ctx, {{"Param", "ParamOut"}, {"Moment", "MomentOut"}}))
    return err;
  T wd = coupledDecay<T>(ctx);
  T *p = ctx.output("ParamOut").data<T>(), *m = ctx.output("MomentOut").data<T>();
  if (g.count > 0) {
    OAR_CUDA_LAUNCH(rowWiseMomentKernel<T>, g.count, g, wd, p, m);
    if (g.width > 0)
      OAR_CUDA_LAUNCH(rowWiseParamKernel<T>, g.count * g.width, g, updateRate<T>(ctx), eps, wd, m,
                      p, g.count * g.width);
  }
  advanceStep<T>(ctx);
  return launched("adagrad");
}

/// Each row's own step: beta^t with t the number of updates that touched it. decoupled is
/// adamw's decay: p shrinks by lr * decoupled before the step (0 for adam).
namespace {
template <typename T> struct LazyAdamArgs {
  UpdateRate<T> rate;
  T b1, b2, eps, wd, decoupled;
};
} // namespace

template <typename T>
__global__ void lazyAdamKernel(TouchedRows<T> g, LazyAdamArgs<T> a, T *p, T *m1, T *m2,
                               const T *b1p, const T *b2p, int64_t total) {
  const T lr = a.rate();
  OAR_CUDA_LOOP(e, total) {
    const int64_t k = e / g.width, j = e % g.width, r = g.id(k), at = r * g.width + j;
    const T lrT = mulRn(lr, sqrt(T(1) - b2p[r])) / (T(1) - b1p[r]);
    const T epsT = mulRn(a.eps, sqrt(T(1) - b2p[r]));
    T pj = p[at];
    const T gr = g.grad(k, j) + mulRn(a.wd, pj);
    if (a.decoupled != T(0))
      pj = mulRn(pj, T(1) - mulRn(lr, a.decoupled));
    T nm1 = mulRn(a.b1, m1[at]) + mulRn(T(1) - a.b1, gr);
    T nm2 = mulRn(a.b2, m2[at]) + mulRn(mulRn(T(1) - a.b2, gr), gr);
    m1[at] = nm1;
    m2[at] = nm2;
    p[at] = pj - mulRn(lrT, nm1) / (sqrt(nm2) + epsT);
  }
}

/// After lazyAdamKernel (which reads the old powers): one thread per touched row.
template <typename T>
__global__ void advancePowersKernel(TouchedRows<T> g, T b1, T b2, T *b1p, T *b2p) {
  OAR_CUDA_LOOP(k, g.count) {
    const int64_t r = g.id(k);
    b1p[r] *= b1;
    b2p[r] *= b2;
  }
}

template <typename T> llvm::Error lazyAdam(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  LazyAdamArgs<T> a{updateRate<T>(ctx),
                    T(ctx.attrs().getFloat("beta1")),
                    T(ctx.attrs().getFloat("beta2")),
                    T(ctx.attrs().getFloat("epsilon")),
                    coupledDecay<T>(ctx),
                    decoupledDecay<T>(ctx)};
  if (llvm::Error err = keepUntouched(ctx, {{"Param", "ParamOut"},
                                            {"Moment1", "Moment1Out"},
                                            {"Moment2", "Moment2Out"},
                                            {"Beta1Pow", "Beta1PowOut"},
                                            {"Beta2Pow", "Beta2PowOut"}}))
    return err;
  T *p = ctx.output("ParamOut").data<T>();
  T *m1 = ctx.output("Moment1Out").data<T>(), *m2 = ctx.output("Moment2Out").data<T>();
  T *b1p = ctx.output("Beta1PowOut").data<T>(), *b2p = ctx.output("Beta2PowOut").data<T>();
  if (g.count > 0) {
    if (g.width > 0)
      OAR_CUDA_LAUNCH(lazyAdamKernel<T>, g.count * g.width, g, a, p, m1, m2, b1p, b2p,
                      g.count * g.width);
    OAR_CUDA_LAUNCH(advancePowersKernel<T>, g.count, g, a.b1, a.b2, b1p, b2p);
  }
  advanceStep<T>(ctx);
  return launched(ctx.op().type());
}

template llvm::Error sgdRows<float>(KernelContext &);
template llvm::Error sgdRows<double>(KernelContext &);
template llvm::Error adagradRows<float>(KernelContext &);
template llvm::Error adagradRows<double>(KernelContext &);
template llvm::Error rowWiseAdagrad<float>(KernelContext &);
template llvm::Error rowWiseAdagrad<double>(KernelContext &);
template llvm::Error lazyAdam<float>(KernelContext &);
template llvm::Error lazyAdam<double>(KernelContext &);

} // namespace oar::cuda
