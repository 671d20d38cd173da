// The hashes oar's files and processes must agree on: each defined here, once. The small ones
// are usable in CUDA kernels too (a GPU computes a feature's key as the CPU does).
#pragma once

#include <cstdint>

#include "llvm/ADT/StringRef.h"

#ifdef __CUDACC__
#define OAR_HOST_DEVICE __host__ __device__
#else
#define OAR_HOST_DEVICE
#endif

namespace oar {

/// FNV-1a's 64-bit offset basis and prime.
inline constexpr uint64_t kFnvBasis = 14695981039346656037ull;
inline constexpr uint64_t kFnvPrime = 1099511628211ull;
/// SplitMix64's increment (2^64 over the golden ratio): consecutive seeds or counters times it
/// are far apart.
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

/// One byte into an FNV-1a hash.
OAR_HOST_DEVICE constexpr uint64_t fnvByte(uint64_t h, uint8_t byte) {
  return (h ^ byte) * kFnvPrime;
}

/// SplitMix64's finaliser, a bijective mix of 64 bits: neighbouring keys (ids 0, 1, 2...) land
/// on unrelated buckets and shards.
OAR_HOST_DEVICE constexpr uint64_t mixKey(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The FNV-1a 64-bit hash (stable across processes and machines); `h` carries a hash of the
/// bytes before `s` on, so fnv1a64(b, fnv1a64(a)) == fnv1a64(a + b).
inline uint64_t fnv1a64(llvm::StringRef s, uint64_t h = kFnvBasis) {
  for (char c : s)
    h = fnvByte(h, static_cast<uint8_t>(c));
  return h;
}

} // namespace oar
