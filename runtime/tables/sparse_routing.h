// Where a key of a distributed table lives: a fixed number of virtual shards, each on one pserver.
#pragma once

#include <cstdint>

#include "support/hash.h"

namespace oar::runtime {

/// Keys of distributed tables are uint64; these two are reserved by the pservers' hash maps.
inline bool reservedKey(uint64_t key) { return key >= ~uint64_t(0) - 1; }

/// A key's virtual shard is fixed by the table (mixKey(key) mod numShards); shard s lives on
/// pserver s mod numPservers. A checkpoint written per virtual shard loads on any number of
/// pservers, and a key's pserver never depends on anything but the key.
struct SparseRouting {
  int64_t numShards = 1000;
  int64_t numPservers = 1;
  int64_t shardOf(uint64_t key) const {
    return static_cast<int64_t>(mixKey(key) % static_cast<uint64_t>(numShards));
  }
  int64_t pserverOf(uint64_t key) const { return shardOf(key) % numPservers; }
};

} // namespace oar::runtime
