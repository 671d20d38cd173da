// Cluster specs from the environment: which launch convention is in use.
#include "runtime/cluster.h"

#include "ir/error.h"
#include "runtime/cluster_conventions.h"
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
      {"TF_CONFIG", {"TF_CONFIG"}},
      {"Paddle",
       {"PADDLE_TRAINING_ROLE", "TRAINING_ROLE", "PADDLE_PSERVERS_IP_PORT_LIST",
        "PADDLE_PSERVER_IPS", "PADDLE_PSERVER_PORT", "PADDLE_TRAINERS", "PADDLE_TRAINERS_NUM",
        "PADDLE_TRAINER_ID", "PADDLE_CURRENT_IP", "PADDLE_CURRENT_ENDPOINT", "PADDLE_PORT"}},
      {"MindSpore",
       {"MS_ROLE", "MS_SCHED_HOST", "MS_SCHED_PORT", "MS_SERVER_NUM", "MS_WORKER_NUM"}},
      {"ps-lite",
       {"DMLC_ROLE", "DMLC_PS_ROOT_URI", "DMLC_PS_ROOT_PORT", "DMLC_NUM_SERVER",
        "DMLC_NUM_WORKER"}},
      {"MPI", {"OMPI_COMM_WORLD_RANK", "PMI_RANK"}},
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
  if (name == "TF_CONFIG")
    return clusterFromTfConfig(getenv("TF_CONFIG"));
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
  if (const char *job = getenv("OAR_JOB_ID"); job && *job)
    spec->jobId = job;
  const char *rank = getenv("SLURM_PROCID"), *size = getenv("SLURM_NTASKS");
  int64_t r = -1, n = 0;
  if (rank && size && !llvm::StringRef(rank).getAsInteger(10, r) &&
      !llvm::StringRef(size).getAsInteger(10, n) && r >= 0 && r < n)
    spec->slurmRank = r, spec->slurmSize = n;
  return spec;
}

bool useSlurmRank(ClusterSpec &spec) {
  if (!spec.role.empty() || spec.mpiRank >= 0 || spec.slurmRank < 0 || spec.pserverCount < 1)
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
