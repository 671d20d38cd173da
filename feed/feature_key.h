// The key of a categorical value: what the schema feeds hash each sparse cell into.
#pragma once

#include <cstdint>

#include "llvm/ADT/StringRef.h"

namespace oar {

/// The key of `value` in the column named `column`: a 63-bit hash of both (non-negative as an
/// i64), stable across machines and releases. Keys depend on the column's name, never its
/// position, so a file's columns may come in any order; one value in two columns gives two keys.
uint64_t featureKey(llvm::StringRef column, llvm::StringRef value);

/// The same for a column already hashed (`columnHash(column)`), for the parsers' inner loops.
uint64_t columnHash(llvm::StringRef column);
uint64_t featureKeyFrom(uint64_t columnHash, llvm::StringRef value);
/// The key of an integer value: that of its decimal text, so 012 and 12 give one key, and a feed
/// reading "12" and the feature_key op given 12 agree.
uint64_t integerKeyFrom(uint64_t columnHash, int64_t value);

} // namespace oar
