// Cluster specs from the environment: which launch convention is in use.
#include "runtime/cluster/cluster.h"

#include "runtime/cluster/cluster_conventions.h"
#include "support/env_names.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"

namespace oar::runtime {

namespace {
/// A launch convention: the variables that say it is in use.
struct Convention {
  const char *name;
  std::vector<const char *> vars;
};

const std::vector<Convention> &conventions() {
  static const std::vector<Convention> all = {
      {env::kTfConfig, {env::kTfConfig}},
      {"Paddle",
       {env::kPaddleTrainingRole, env::kTrainingRole, env::kPaddlePserversIpPortList,
        env::kPaddlePserverIps, env::kPaddlePserverPort, env::kPaddleTrainers,
        env::kPaddleTrainersNum, env::kPaddleTrainerId, env::kPaddleCurrentIp,
        env::kPaddleCurrentEndpoint, env::kPaddlePort, env::kPaddleTrainerEndpoints}},
      {"MindSpore",
       {env::kMsRole, env::kMsSchedHost, env::kMsSchedPort, env::kMsServerNum, env::kMsWorkerNum}},
      {"ps-lite",
       {env::kDmlcRole, env::kDmlcPsRootUri, env::kDmlcPsRootPort, env::kDmlcNumServer,
        env::kDmlcNumWorker}},
      {"MPI", {env::kOmpiRank, env::kPmiRank}},
  };
  return all;
}

/// The first variable of `c` that is set, or nullptr.
const char *firstSet(const Convention &c, const GetEnv &getenv) {
  for (const char *v : c.vars)
    if (const char *value = getenv(v); value && *value)
      return v;
  return nullptr;
}
} // namespace

/// The convention in use, checked whole: never two, never half of one, so that a node meant to
/// be part of a job never trains alone by mistake.
static llvm::Expected<ClusterSpec> clusterFromRoleEnv(const GetEnv &getenv) {
  const Convention *used = nullptr;
  const char *usedVar = nullptr;
  for (const Convention &c : conventions()) {
    const char *var = firstSet(c, getenv);
    if (!var)
      continue;
    if (used)
      return makeError("the environment sets {0} ({1}) and {2} ({3}); a node follows one launch "
                       "convention: unset the other",
                       usedVar, used->name, var, c.name);
    used = &c, usedVar = var;
  }
  if (!used)
    return ClusterSpec(); // not part of a job: one machine
  llvm::StringRef name = used->name;
  if (name == env::kTfConfig)
    return clusterFromTfConfig(getenv(env::kTfConfig));
  if (name == "MindSpore")
    return clusterFromMindSpore(getenv);
  if (name == "ps-lite")
    return clusterFromPsLite(getenv);
  if (name == "MPI")
    return clusterFromMpi(getenv);
  return clusterFromPaddle(getenv, usedVar);
}

llvm::Expected<ClusterSpec> clusterFromEnv(const GetEnv &getenv) {
  auto spec = clusterFromRoleEnv(getenv);
  if (!spec)
    return spec;
  if (const char *job = getenv(env::kOarJobId); job && *job)
    spec->jobId = job;
  const char *rank = getenv(env::kSlurmProcId), *size = getenv(env::kSlurmNtasks);
  int64_t r = -1, n = 0;
  if (rank && size && !llvm::StringRef(rank).getAsInteger(10, r) &&
      !llvm::StringRef(size).getAsInteger(10, n) && r >= 0 && r < n)
    spec->slurmRank = r, spec->slurmSize = n;
  return spec;
}

bool useSlurmRank(ClusterSpec &spec, bool collective) {
  if (spec.role != Role::None || spec.mpiRank >= 0 || spec.slurmRank < 0 ||
      (spec.pserverCount < 1 && !collective))
    return false;
  spec.mpiRank = spec.slurmRank, spec.mpiSize = spec.slurmSize;
  return true;
}

llvm::Expected<size_t> pserverIndex(const ClusterSpec &spec) {
  for (size_t i = 0; i < spec.pservers.size(); ++i)
    if (spec.pservers[i] == spec.currentEndpoint)
      return i;
  return makeError("this pserver's endpoint \"{0}\" is not in the pserver list ({1}); set "
                   "--endpoint or PADDLE_CURRENT_IP/PADDLE_CURRENT_ENDPOINT",
                   spec.currentEndpoint, llvm::join(spec.pservers, ","));
}

} // namespace oar::runtime
