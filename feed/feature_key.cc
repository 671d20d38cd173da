// A column's hash (the FNV basis its values start from), and integer ids' keys.
#include "feed/feature_key.h"

#include <charconv>

namespace oar {

uint64_t columnHash(llvm::StringRef column) {
  // The name, then a byte no name ends with, so "ab"+"c" and "a"+"bc" differ.
  return fnv1a64(llvm::StringRef("\x1f", 1), fnv1a64(column));
}

uint64_t integerKeyFrom(uint64_t columnHash, int64_t value) {
  char text[24];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return featureKeyFrom(columnHash, llvm::StringRef(text, end - text));
}

uint64_t featureKey(llvm::StringRef column, llvm::StringRef value) {
  return featureKeyFrom(columnHash(column), value);
}

} // namespace oar
