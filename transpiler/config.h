// The distributed job's configuration: one struct, the same names as oar-transpile's flags.
#pragma once

#include <string>
#include <vector>

#include "ir/distributed_mode.h"
#include "llvm/Support/Error.h"

namespace oar {

struct DistributeConfig {
  int64_t trainerId = 0;
  int64_t trainers = 1;
  std::vector<std::string> pservers; // host:port, in endpoint order
  Mode mode = Mode::Sync;
  int64_t geoKSteps = 100;
  bool sliceVarUp = true;
  int64_t minBlockSize = 8192;             // elements
  std::string splitMethod = "round_robin"; // round_robin | hash_name
  int64_t tableShards = 1000;              // virtual shards of each distributed table

  /// One-line errors naming the bad field and its value.
  llvm::Error validate() const;
};

/// Splits "h1:p1,h2:p2" into endpoints (no validation).
std::vector<std::string> splitEndpoints(llvm::StringRef list);
/// Checks one host:port endpoint.
llvm::Error checkEndpoint(llvm::StringRef endpoint);

} // namespace oar
