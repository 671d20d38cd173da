// The key of a categorical value: what the schema feeds hash each sparse cell into.
#pragma once

#include <cstdint>

#include "support/hash.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace oar {

/// The key of `value` in the column named `column`: a 63-bit hash of both (non-negative as an
/// i64), stable across machines and releases. Keys depend on the column's name, never its
/// position, so a file's columns may come in any order; one value in two columns gives two keys.
uint64_t featureKey(llvm::StringRef column, llvm::StringRef value);

/// A column's hash, where its values' keys start from.
uint64_t columnHash(llvm::StringRef column);
/// The key of an integer value: that of its decimal text, so 012 and 12 give one key, and a
/// feed reading "12" and the feature_key op given 12 agree.
uint64_t integerKeyFrom(uint64_t columnHash, int64_t value);

/// featureKey for a column already hashed: FNV-1a over the value from the column's basis, then
/// splitmix64's finaliser to spread the bits (FNV alone clusters short ids in the low bits that
/// id_mod keeps). Inline: the parsers call it for every cell.
inline uint64_t featureKeyFrom(uint64_t columnHash, llvm::StringRef value) {
  return mixKey(fnv1a64(value, columnHash)) >> 1;
}

/// The key of a crossed column's value: its columns' keys (in the cross's order) mixed one by one
/// into the cross's own column hash, so "a*b" keys differ from "b*a" keys and from every
/// column's. The feeds' crosses and the feature_cross op call this (its CUDA kernel repeats it:
/// kernels/cuda/feature_transforms.cu).
inline uint64_t crossKeyFrom(uint64_t crossHash, llvm::ArrayRef<uint64_t> keys) {
  uint64_t h = crossHash;
  for (uint64_t k : keys)
    h = mixKey(h ^ (k + 0x9e3779b97f4a7c15ULL)); // the constant: a zero key still mixes
  return h >> 1;
}

} // namespace oar
