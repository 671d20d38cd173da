// CPU kernels of fill_constant, uniform_random, gaussian_random, fill_zeros_like.
// The random kernels use their own transforms of mt19937_64, so numbers are the same on every
// machine and standard library.
#include <cmath>
#include <random>

#include "kernels/cpu/cpu_util.h"
#include "kernels/cpu/random_fill.h"

namespace oar::cpu {

template <typename T> static llvm::Error fillConstant(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  std::fill_n(out.data<T>(), out.numel(), static_cast<T>(ctx.attrs().getFloat("value")));
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(fill_constant, fillConstant);

/// A double in [0, 1) from the top 53 bits of the generator.
static double unitUniform(std::mt19937_64 &gen) { return (gen() >> 11) * 0x1.0p-53; }

template <typename T> void fillUniform(T *o, int64_t n, int64_t seed, double lo, double hi) {
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < n; ++i)
    o[i] = static_cast<T>(lo + (hi - lo) * unitUniform(gen));
}
template void fillUniform<float>(float *, int64_t, int64_t, double, double);
template void fillUniform<double>(double *, int64_t, int64_t, double, double);

template <typename T> static llvm::Error uniformRandom(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  fillUniform(out.data<T>(), out.numel(), ctx.attrs().getInt("seed"),
              ctx.attrs().getFloat("min"), ctx.attrs().getFloat("max"));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(uniform_random, uniformRandom);

// Box-Muller, one pair of uniforms per value.
template <typename T>
void fillGaussian(T *o, int64_t n, int64_t seed, double mean, double stddev) {
  std::mt19937_64 gen(seed);
  for (int64_t i = 0; i < n; ++i) {
    double u1 = 1.0 - unitUniform(gen), u2 = unitUniform(gen);
    o[i] = static_cast<T>(mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2));
  }
}
template void fillGaussian<float>(float *, int64_t, int64_t, double, double);
template void fillGaussian<double>(double *, int64_t, int64_t, double, double);

template <typename T> static llvm::Error gaussianRandom(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  fillGaussian(out.data<T>(), out.numel(), ctx.attrs().getInt("seed"),
               ctx.attrs().getFloat("mean"), ctx.attrs().getFloat("std"));
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(gaussian_random, gaussianRandom);

template <typename T> static llvm::Error fillZerosLike(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  std::fill_n(out.data<T>(), out.numel(), T(0));
  return llvm::Error::success();
}
OAR_CPU_ALL_KERNELS(fill_zeros_like, fillZerosLike);

} // namespace oar::cpu
