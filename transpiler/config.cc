// Validation of the distributed configuration.
#include "transpiler/config.h"

#include <cmath>
#include <set>

#include "support/error.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace oar {

std::vector<std::string> splitEndpoints(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  list.split(parts, ',', -1, false);
  std::vector<std::string> out;
  for (llvm::StringRef p : parts)
    out.push_back(p.trim().str());
  return out;
}

llvm::Error checkEndpoint(llvm::StringRef endpoint) {
  auto [host, port] = endpoint.rsplit(':');
  unsigned portNum = 0;
  if (host.empty() || port.empty() || port.getAsInteger(10, portNum) || portNum == 0 ||
      portNum > 65535 || host.contains_insensitive(' '))
    return makeError("pserver endpoint \"{0}\" is malformed; expected host:port with a port in "
                     "1..65535",
                     endpoint);
  return llvm::Error::success();
}

llvm::Error setModeFromFlags(DistributeConfig &config, llvm::StringRef mode,
                             llvm::StringRef hybridTables) {
  config.hybrid = mode == "hybrid";
  if (!config.hybrid && !hybridTables.empty())
    return makeError("--hybrid-tables={0} is for --mode hybrid; this job runs {1}", hybridTables,
                     mode);
  if (config.hybrid) {
    if (hybridTables.empty() || hybridTables == "sync")
      config.mode = Mode::Sync;
    else if (hybridTables == "async")
      config.mode = Mode::Async;
    else
      return makeError("--hybrid-tables={0}: expected sync or async", hybridTables);
    return llvm::Error::success();
  }
  auto parsed = parseMode(mode);
  if (!parsed)
    return llvm::make_error<llvm::StringError>(llvm::toString(parsed.takeError()) + " (or hybrid)",
                                               llvm::inconvertibleErrorCode());
  config.mode = *parsed;
  return llvm::Error::success();
}

std::string modeFlag(const DistributeConfig &config) {
  return config.hybrid ? "hybrid" : modeName(config.mode).str();
}

llvm::Error setBucketsFromFlags(DistributeConfig &config, double firstBucketMb, double bucketMb) {
  if (!(firstBucketMb > 0) || !(bucketMb >= 0) || firstBucketMb > 65536 || bucketMb > 65536)
    return makeError("--first-bucket-mb={0} --bucket-mb={1}: the first gradient bucket needs more "
                     "than 0 MiB, the others 0 (one all-reduce after backward) or more, at most "
                     "65536",
                     firstBucketMb, bucketMb);
  config.firstBucketBytes = std::max<int64_t>(1, std::llround(firstBucketMb * 1048576));
  config.bucketBytes = std::llround(bucketMb * 1048576);
  return llvm::Error::success();
}

llvm::Error DistributeConfig::validate() const {
  if (trainers < 1)
    return makeError("trainers is {0}; need at least 1", trainers);
  if (trainerId < 0 || trainerId >= trainers)
    return makeError("trainer_id {0} is out of range for {1} trainers (use 0..{2})", trainerId,
                     trainers, trainers - 1);
  if (firstBucketBytes < 1 || bucketBytes < 0)
    return makeError("gradient buckets of {0} bytes, the first of {1}: the first needs at least 1 "
                     "byte, the others at least 0 (0: one all-reduce after backward)",
                     bucketBytes, firstBucketBytes);
  if (mode == Mode::Collective) {
    if (!pservers.empty())
      return makeError("collective mode has no pservers (the trainers all-reduce their "
                       "gradients), but {0} were given",
                       pservers.size());
    return llvm::Error::success();
  }
  if (pservers.empty())
    return makeError("no pserver endpoints given (--pservers host:port,...)");
  std::set<std::string> seen;
  for (const std::string &ep : pservers) {
    if (llvm::Error err = checkEndpoint(ep))
      return err;
    if (!seen.insert(ep).second)
      return makeError("pserver endpoint {0} is listed twice", ep);
  }
  if (hybrid && mode != Mode::Sync && mode != Mode::Async)
    return makeError("a hybrid job's tables train in sync or async mode, not {0}", modeName(mode));
  if (mode == Mode::Geo && geoKSteps < 1)
    return makeError("geo_k_steps is {0}; need at least 1", geoKSteps);
  if (minBlockSize < 1)
    return makeError("min_block_size is {0}; need at least 1 element", minBlockSize);
  if (splitMethod != "round_robin" && splitMethod != "hash_name")
    return makeError("split_method \"{0}\" must be round_robin or hash_name", splitMethod);
  if (tableShards < 1 || tableShards > (int64_t(1) << 20))
    return makeError("table_shards is {0}; need 1 to {1}", tableShards, int64_t(1) << 20);
  return llvm::Error::success();
}

} // namespace oar
