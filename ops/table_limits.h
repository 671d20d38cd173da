// Limits of distributed tables that the table ops' checks and the pservers both apply.
#pragma once

#include <cstdint>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar::ops {

/// Widest row (floats) of a distributed table: sizes computed from a width and a batch's key
/// count stay far from overflowing.
inline constexpr int64_t kMaxTableWidth = int64_t(1) << 20;

/// Whether `optimizer` (an optimizer op's type) can update a distributed table.
llvm::Error checkSparseOptimizer(llvm::StringRef optimizer);

} // namespace oar::ops
