// A column's hash (the FNV basis its values start from), and integer ids' keys.
#include "feed/feature_key.h"

#include <charconv>

namespace oar {

namespace {
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ULL, kFnvPrime = 0x100000001b3ULL;

uint64_t fnv(uint64_t h, llvm::StringRef bytes) {
  for (char c : bytes)
    h = (h ^ static_cast<uint8_t>(c)) * kFnvPrime;
  return h;
}
} // namespace

uint64_t columnHash(llvm::StringRef column) {
  // The name, then a byte no name ends with, so "ab"+"c" and "a"+"bc" differ.
  return fnv(fnv(kFnvBasis, column), llvm::StringRef("\x1f", 1));
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
