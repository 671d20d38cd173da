// CPU updates of only the rows a gradient touches. The arithmetic per element is that of the
// dense kernels in optimizers.cc, so a row updated here gets the same bits as there; weight
// decay, too, reaches only the rows touched.
#include "kernels/cpu/sparse_optimizers.h"
#include "kernels/cpu/update_rate.h"
#include "kernels/kernel_shapes.h"

#include <cmath>
#include <cstring>

namespace oar::cpu {

namespace {
/// The gradient rows an update applies, each id once.
template <typename T> struct TouchedRows {
  SelectedRows merged;          // the merged Grad when it is selected rows
  const int64_t *ids = nullptr; // nullptr: every row in order (a dense Grad)
  const T *values = nullptr;    // row k of the gradient at values + k * width
  int64_t count = 0, width = 1;
  int64_t id(int64_t k) const { return ids ? ids[k] : k; }
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
  // Shape inference checked the height and width against Param; the ids are checked here.
  const SelectedRows &grad = ctx.inputRows("Grad");
  if (llvm::Error err = checkRows(grad, ctx.describeInput("Grad")))
    return err;
  mergeRows(grad, out.merged);
  out.ids = out.merged.rows.data();
  out.count = static_cast<int64_t>(out.merged.rows.size());
  out.values = out.merged.values.template data<T>();
  return llvm::Error::success();
}

/// Rows of a large table are scattered over memory: ask for the rows a few updates ahead while
/// this one runs, so their cache misses overlap instead of queueing.
template <typename T, typename... State>
static void prefetchRows(const TouchedRows<T> &g, int64_t k, const T *param,
                         const State *...state) {
  constexpr int64_t kAhead = 8;
  if (!g.ids || k + kAhead >= g.count)
    return;
  int64_t base = g.id(k + kAhead) * g.width;
  __builtin_prefetch(param + base, 1);
  (__builtin_prefetch(state + base, 1), ...);
}

/// The output's data, holding the input's values first when they are separate vars (the rows not
/// touched keep them).
template <typename T> static T *updated(KernelContext &ctx, const char *in, const char *out) {
  const Tensor &src = ctx.input(in);
  Tensor &dst = ctx.output(out);
  if (dst.raw() != src.raw())
    std::memcpy(dst.raw(), src.raw(), src.bytes());
  return dst.data<T>();
}

template <typename T> static llvm::Error sgdRows(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T lr = updateRate<T>(ctx), wd = coupledDecay<T>(ctx);
  T *p = updated<T>(ctx, "Param", "ParamOut");
  for (int64_t k = 0; k < g.count; ++k) {
    prefetchRows(g, k, p);
    T *row = p + g.id(k) * g.width;
    const T *gr = g.values + k * g.width;
    for (int64_t j = 0; j < g.width; ++j)
      row[j] = row[j] - lr * (gr[j] + wd * row[j]);
  }
  return llvm::Error::success();
}

template <typename T> static llvm::Error adagradRows(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T lr = updateRate<T>(ctx), eps = ctx.attrs().getFloat("epsilon"), wd = coupledDecay<T>(ctx);
  T *p = updated<T>(ctx, "Param", "ParamOut"), *m = updated<T>(ctx, "Moment", "MomentOut");
  for (int64_t k = 0; k < g.count; ++k) {
    prefetchRows(g, k, p, m);
    int64_t base = g.id(k) * g.width;
    const T *gr = g.values + k * g.width;
    for (int64_t j = 0; j < g.width; ++j) {
      T gi = gr[j] + wd * p[base + j];
      T nm = m[base + j] + gi * gi;
      m[base + j] = nm;
      p[base + j] = p[base + j] - lr * gi / (std::sqrt(nm) + eps);
    }
  }
  return llvm::Error::success();
}

template <typename T> static llvm::Error rowWiseAdagradOf(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T lr = updateRate<T>(ctx), eps = ctx.attrs().getFloat("epsilon"), wd = coupledDecay<T>(ctx);
  T *p = updated<T>(ctx, "Param", "ParamOut"), *m = updated<T>(ctx, "Moment", "MomentOut");
  for (int64_t k = 0; k < g.count; ++k) {
    int64_t r = g.id(k);
    const T *gr = g.values + k * g.width;
    T *row = p + r * g.width;
    T squares = 0;
    for (int64_t j = 0; j < g.width; ++j) {
      T gi = gr[j] + wd * row[j];
      squares += gi * gi;
    }
    T nm = m[r] + (g.width ? squares / T(g.width) : T(0));
    m[r] = nm;
    T denom = std::sqrt(nm) + eps;
    for (int64_t j = 0; j < g.width; ++j)
      row[j] = row[j] - lr * (gr[j] + wd * row[j]) / denom;
  }
  return llvm::Error::success();
}

template <typename T> static llvm::Error lazyAdamOf(KernelContext &ctx) {
  TouchedRows<T> g;
  if (llvm::Error err = touchedRows(ctx, g))
    return err;
  T lr = updateRate<T>(ctx), wd = coupledDecay<T>(ctx);
  T decoupled = decoupledDecay<T>(ctx);
  T b1 = ctx.attrs().getFloat("beta1"), b2 = ctx.attrs().getFloat("beta2"),
    eps = ctx.attrs().getFloat("epsilon");
  T *p = updated<T>(ctx, "Param", "ParamOut");
  T *m1 = updated<T>(ctx, "Moment1", "Moment1Out"), *m2 = updated<T>(ctx, "Moment2", "Moment2Out");
  T *b1p = updated<T>(ctx, "Beta1Pow", "Beta1PowOut"),
    *b2p = updated<T>(ctx, "Beta2Pow", "Beta2PowOut");
  for (int64_t k = 0; k < g.count; ++k) {
    prefetchRows(g, k, p, m1, m2);
    int64_t r = g.id(k), base = r * g.width;
    const T *gr = g.values + k * g.width;
    // This row's own step: beta^t with t the number of updates that touched it.
    T lrT = lr * std::sqrt(T(1) - b2p[r]) / (T(1) - b1p[r]);
    T epsT = eps * std::sqrt(T(1) - b2p[r]);
    for (int64_t j = 0; j < g.width; ++j) {
      T pj = p[base + j];
      T gi = gr[j] + wd * pj;
      if (decoupled != T(0))
        pj = pj * (T(1) - lr * decoupled);
      T nm1 = b1 * m1[base + j] + (T(1) - b1) * gi;
      T nm2 = b2 * m2[base + j] + (T(1) - b2) * gi * gi;
      m1[base + j] = nm1;
      m2[base + j] = nm2;
      p[base + j] = pj - lrT * nm1 / (std::sqrt(nm2) + epsT);
    }
    b1p[r] *= b1;
    b2p[r] *= b2;
  }
  return llvm::Error::success();
}

static bool isF64(const KernelContext &ctx) { return ctx.input("Param").dtype() == proto::F64; }

llvm::Error sparseSgd(KernelContext &ctx) {
  return isF64(ctx) ? sgdRows<double>(ctx) : sgdRows<float>(ctx);
}
llvm::Error sparseAdagrad(KernelContext &ctx) {
  return isF64(ctx) ? adagradRows<double>(ctx) : adagradRows<float>(ctx);
}
llvm::Error rowWiseAdagrad(KernelContext &ctx) {
  return isF64(ctx) ? rowWiseAdagradOf<double>(ctx) : rowWiseAdagradOf<float>(ctx);
}
llvm::Error lazyAdam(KernelContext &ctx) {
  return isF64(ctx) ? lazyAdamOf<double>(ctx) : lazyAdamOf<float>(ctx);
}

} // namespace oar::cpu
