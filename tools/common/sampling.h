// What the synthetic click-log generators share: seeded hashes and draws that give the same
// bytes on every machine, Zipf ranks, and an output file that names itself in its errors.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "support/error.h"
#include "support/hash.h"

namespace oar {

/// A hash of a seed and up to four small integers.
inline uint64_t hashOf(uint64_t seed, uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0) {
  uint64_t h = mixKey(seed + kGoldenGamma);
  for (uint64_t v : {a, b, c, d})
    h = mixKey(h ^ (v + kGoldenGamma + (h << 6)));
  return h;
}

/// Uniform in [0, 1) from the top 53 bits.
inline double unit(uint64_t h) { return static_cast<double>(h >> 11) * 0x1.0p-53; }

/// About N(0, 1) from one hash: the sum of four 16-bit uniforms (Irwin-Hall), rescaled.
inline double gaussOf(uint64_t h) {
  double s = 0;
  for (int i = 0; i < 4; ++i, h >>= 16)
    s += static_cast<double>(h & 0xffff) / 65536.0;
  return (s - 2.0) * std::sqrt(3.0);
}

/// A seeded stream of 64-bit draws (splitmix64): portable, so files match on every machine.
struct Rng {
  uint64_t state;
  uint64_t next() { return mixKey(state += kGoldenGamma); }
  double uniform() { return unit(next()); }
  double normal() { // Box-Muller; one of the pair is enough here
    double u = 1.0 - uniform(), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * M_PI * v);
  }
};

/// Zipf ranks 1..n with P(k) ~ k^-s by rejection-inversion (Hörmann and Derflinger 1996): O(1)
/// per draw and no table, which matters for slots of 10^6 values.
class ZipfSampler {
public:
  ZipfSampler(int64_t n, double s) : n_(n), s_(s) {
    hX1_ = hIntegral(1.5) - 1.0;
    hN_ = hIntegral(n + 0.5);
    sC_ = 2.0 - hIntegralInverse(hIntegral(2.5) - h(2.0));
  }
  int64_t draw(Rng &rng) const {
    for (;;) {
      double u = hN_ + rng.uniform() * (hX1_ - hN_);
      double x = hIntegralInverse(u);
      int64_t k = std::clamp<int64_t>(static_cast<int64_t>(x + 0.5), 1, n_);
      if (k - x <= sC_ || u >= hIntegral(k + 0.5) - h(static_cast<double>(k)))
        return k;
    }
  }

private:
  double h(double x) const { return std::exp(-s_ * std::log(x)); }
  double hIntegral(double x) const {
    double logX = std::log(x);
    return helper2((1.0 - s_) * logX) * logX;
  }
  double hIntegralInverse(double x) const {
    double t = std::max(x * (1.0 - s_), -1.0);
    return std::exp(helper1(t) * x);
  }
  static double helper1(double x) { // log1p(x) / x, smooth at 0
    return std::abs(x) > 1e-8 ? std::log1p(x) / x : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
  }
  static double helper2(double x) { // expm1(x) / x, smooth at 0
    return std::abs(x) > 1e-8 ? std::expm1(x) / x
                              : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
  }
  int64_t n_;
  double s_, hX1_, hN_, sC_;
};

/// A file written through stdio with a large buffer; errors name the file.
class OutFile {
public:
  llvm::Error open(const std::string &path) {
    path_ = path;
    f_ = std::fopen(path.c_str(), "w");
    if (!f_)
      return makeError("{0}: cannot write: {1}", path, std::strerror(errno));
    return llvm::Error::success();
  }
  void write(const std::string &s) { std::fwrite(s.data(), 1, s.size(), f_); }
  llvm::Error close() {
    bool bad = std::ferror(f_) != 0;
    bad |= std::fclose(f_) != 0;
    f_ = nullptr;
    if (bad)
      return makeError("{0}: write failed: {1}", path_, std::strerror(errno));
    return llvm::Error::success();
  }
  ~OutFile() {
    if (f_)
      std::fclose(f_);
  }

private:
  std::string path_;
  FILE *f_ = nullptr;
};

} // namespace oar
