// The dense transforms of a schema, as pure functions: the feeds apply them while parsing, and the
// log1p and bucketize ops (ops/feature_transforms.cc) apply the same ones inside a program.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace oar {

/// sign(x) * log(1 + |x|): log1p that keeps the sign, so a negative count or refund stays finite.
inline double signedLog1p(double x) { return std::copysign(std::log1p(std::abs(x)), x); }

/// The bucket of x among ascending boundaries: i when x < boundaries[i] (the first such i), n when
/// x is at or past the last (TensorFlow's bucketized_column).
template <typename Boundaries, typename T> int64_t bucketOf(const Boundaries &boundaries, T x) {
  return std::upper_bound(std::begin(boundaries), std::end(boundaries), x) -
         std::begin(boundaries);
}

} // namespace oar
