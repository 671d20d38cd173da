// CPU kernels of scale and sum (dense, selected rows, or a mix).
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

template <typename T> static llvm::Error scale(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T s = static_cast<T>(ctx.attrs().getFloat("scale")),
    b = static_cast<T>(ctx.attrs().getFloat("bias"));
  const T *in = x.data<T>();
  T *out = ctx.output("Out").data<T>();
  const int64_t n = x.numel();
  for (int64_t i = 0; i < n; ++i)
    out[i] = s * in[i] + b;
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(scale, scale);

// Sums with selected rows among the inputs: all sparse concatenates their rows; a mix adds
// every input, in order, into a dense Out.
template <typename T> static llvm::Error sumWithRows(KernelContext &ctx) {
  const size_t n = ctx.inputCount("X");
  std::vector<const SelectedRows *> sparse;
  for (size_t i = 0; i < n; ++i)
    if (ctx.inputIsRows("X", i)) {
      sparse.push_back(&ctx.inputRows("X", i));
      if (llvm::Error err = checkRows(*sparse.back(), ctx.describeInput("X", i)))
        return err;
    }
  if (sparse.size() == n) {
    concatRows(sparse, ctx.outputRows("Out"));
    return llvm::Error::success();
  }
  Tensor acc(dtypeOf<T>(), ctx.output("Out").dims()); // Out may be one of the inputs
  for (size_t i = 0; i < n; ++i) {
    if (ctx.inputIsRows("X", i)) {
      addRowsTo(ctx.inputRows("X", i), acc);
      continue;
    }
    const T *in = ctx.input("X", i).data<T>();
    T *a = acc.data<T>();
    for (int64_t e = 0; e < acc.numel(); ++e)
      a[e] += in[e];
  }
  std::copy_n(acc.data<T>(), acc.numel(), ctx.output("Out").data<T>());
  return llvm::Error::success();
}

/// Whether `out` shares memory with an input the sum still reads after writing out: any input
/// but the first, or the first other than as the same buffer (out += ... in place is fine).
template <typename T>
static bool outOverlapsLaterInput(KernelContext &ctx, const T *out, int64_t n) {
  auto overlaps = [&](const T *in) { return in < out + n && out < in + n; };
  const T *first = ctx.input("X", 0).data<T>();
  if (first != out && overlaps(first))
    return true;
  for (size_t i = 1; i < ctx.inputCount("X"); ++i)
    if (overlaps(ctx.input("X", i).data<T>()))
      return true;
  return false;
}

// Adds the inputs in order: Out = X0 + X1, then += X2 and so on. Written straight into Out,
// one pass for two inputs (a sync pserver's trainer copies), unless Out shares memory with an
// input read later; then into a temporary copied to Out, with the same additions.
template <typename T> static llvm::Error sum(KernelContext &ctx) {
  const size_t count = ctx.inputCount("X");
  for (size_t i = 0; i < count; ++i)
    if (ctx.inputIsRows("X", i))
      return sumWithRows<T>(ctx);
  int64_t n = ctx.input("X", 0).numel();
  const T *first = ctx.input("X", 0).data<T>();
  T *out = ctx.output("Out").data<T>();
  std::vector<T> temporary;
  T *acc = out;
  if (outOverlapsLaterInput(ctx, out, n)) {
    temporary.resize(n);
    acc = temporary.data();
  }
  if (count == 1) {
    if (acc != first)
      std::copy_n(first, n, acc);
  } else {
    const T *second = ctx.input("X", 1).data<T>();
    for (int64_t e = 0; e < n; ++e)
      acc[e] = first[e] + second[e];
  }
  for (size_t i = 2; i < count; ++i) {
    const T *in = ctx.input("X", i).data<T>();
    for (int64_t e = 0; e < n; ++e)
      acc[e] += in[e];
  }
  if (acc != out)
    std::copy_n(acc, n, out);
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(sum, sum);

} // namespace oar::cpu
