// Limits of distributed tables that the table ops' checks and the pservers both apply.
#pragma once

#include <cstdint>

namespace oar::ops {

/// Widest row (floats) of a distributed table: sizes computed from a width and a batch's key
/// count stay far from overflowing.
inline constexpr int64_t kMaxTableWidth = int64_t(1) << 20;

} // namespace oar::ops
