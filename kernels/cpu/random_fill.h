// The random fills of uniform_random and gaussian_random, shared with the CUDA kernels so a
// model initialised on the GPU starts from the same numbers as on the CPU.
#pragma once

#include <cstdint>

namespace oar::cpu {

/// out[i] uniform in [lo, hi) from mt19937_64(seed).
template <typename T> void fillUniform(T *out, int64_t n, int64_t seed, double lo, double hi);
/// out[i] normal(mean, stddev) from mt19937_64(seed), Box-Muller.
template <typename T>
void fillGaussian(T *out, int64_t n, int64_t seed, double mean, double stddev);

} // namespace oar::cpu
