// The conventions whose nodes learn their endpoints from a scheduler: MindSpore's MS_*, ps-lite's
// DMLC_*, and MPI's rank variables (mpirun, srun with PMI).
#include "runtime/cluster/cluster_conventions.h"
#include "support/env_names.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"

namespace oar::runtime {

namespace {

/// The values of `names`, or an error naming those that are missing.
llvm::Expected<std::vector<std::string>> required(const GetEnv &getenv, llvm::StringRef convention,
                                                  const std::vector<const char *> &names) {
  std::vector<std::string> values, missing, all(names.begin(), names.end());
  for (const char *n : names) {
    const char *v = getenv(n);
    values.push_back(v ? v : "");
    if (!v || !*v)
      missing.push_back(n);
  }
  if (!missing.empty()) {
    std::vector<std::string> given;
    for (const char *n : names)
      if (const char *v = getenv(n); v && *v)
        given.push_back(n);
    return makeError("{0} sets {1} but not {2}: a node needs every one of {3}", convention,
                     given.empty() ? "some variables" : llvm::join(given, ", "),
                     llvm::join(missing, ", "), llvm::join(all, ", "));
  }
  return values;
}

llvm::Error readCount(llvm::StringRef name, llvm::StringRef text, int64_t &out, int64_t least = 1) {
  if (text.getAsInteger(10, out) || out < least)
    return makeError("{0} is \"{1}\"; expected a count of at least {2}", name, text, least);
  return llvm::Error::success();
}

/// Fills the scheduler address and counts shared by MindSpore and ps-lite.
llvm::Error schedulerParts(ClusterSpec &spec, const std::vector<std::string> &v,
                           const std::vector<const char *> &names) {
  // v: role, host, port, servers, workers (in that order)
  int64_t port = 0;
  if (llvm::StringRef(v[2]).getAsInteger(10, port) || port < 1 || port > 65535)
    return makeError("{0} is \"{1}\"; expected a port number", names[2], v[2]);
  spec.scheduler = v[1] + ":" + v[2];
  // 0 servers: a collective job's workers, which meet through the scheduler.
  if (llvm::Error err = readCount(names[3], v[3], spec.pserverCount, 0))
    return err;
  return readCount(names[4], v[4], spec.trainers);
}

/// Where this node serves, when it is a pserver: the host other nodes reach it at.
std::string nodeHost(const GetEnv &getenv) {
  for (const char *n : {env::kOarNodeHost, env::kDmlcNodeHost, env::kPodIp})
    if (const char *v = getenv(n); v && *v)
      return v;
  return "127.0.0.1";
}

} // namespace

namespace {

/// A convention whose five variables name the role, the scheduler's host and port, and the counts.
struct SchedulerConvention {
  const char *name;
  std::vector<const char *> vars;            ///< role, host, port, servers, workers
  const char *scheduler, *pserver, *trainer; ///< the role variable's values
};

llvm::Expected<ClusterSpec> readSchedulerConvention(const SchedulerConvention &c,
                                                    const GetEnv &getenv) {
  auto v = required(getenv, c.name, c.vars);
  if (!v)
    return v.takeError();
  ClusterSpec spec;
  llvm::StringRef role = (*v)[0];
  if (role == c.scheduler)
    spec.role = Role::Scheduler;
  else if (role == c.pserver)
    spec.role = Role::Pserver;
  else if (role == c.trainer)
    spec.role = Role::Trainer;
  else
    return makeError("{0} is \"{1}\"; expected {2}, {3} or {4}", c.vars[0], role, c.scheduler,
                     c.pserver, c.trainer);
  if (llvm::Error err = schedulerParts(spec, *v, c.vars))
    return err;
  spec.nodeHost = nodeHost(getenv);
  return spec;
}

} // namespace

llvm::Expected<ClusterSpec> clusterFromMindSpore(const GetEnv &getenv) {
  static const SchedulerConvention ms{
      "MindSpore's convention",
      {env::kMsRole, env::kMsSchedHost, env::kMsSchedPort, env::kMsServerNum, env::kMsWorkerNum},
      "MS_SCHED",
      "MS_PSERVER",
      "MS_WORKER"};
  return readSchedulerConvention(ms, getenv);
}

llvm::Expected<ClusterSpec> clusterFromPsLite(const GetEnv &getenv) {
  static const SchedulerConvention psLite{"ps-lite's convention",
                                          {env::kDmlcRole, env::kDmlcPsRootUri,
                                           env::kDmlcPsRootPort, env::kDmlcNumServer,
                                           env::kDmlcNumWorker},
                                          "scheduler",
                                          "server",
                                          "worker"};
  return readSchedulerConvention(psLite, getenv);
}

llvm::Expected<ClusterSpec> clusterFromMpi(const GetEnv &getenv) {
  auto get = [&](const char *n) -> std::string {
    const char *v = getenv(n);
    return v ? v : "";
  };
  bool open = !get(env::kOmpiRank).empty();
  const char *rankVar = open ? env::kOmpiRank : env::kPmiRank;
  const char *sizeVar = open ? env::kOmpiSize : env::kPmiSize;
  ClusterSpec spec;
  int64_t rank = 0, size = 0;
  if (llvm::StringRef(get(rankVar)).getAsInteger(10, rank) || rank < 0)
    return makeError("{0} is \"{1}\"; expected a rank", rankVar, get(rankVar));
  if (llvm::StringRef(get(sizeVar)).getAsInteger(10, size) || size <= rank)
    return makeError("{0} is \"{1}\" with {2} {3}; expected the number of ranks", sizeVar,
                     get(sizeVar), rankVar, rank);
  spec.mpiRank = rank, spec.mpiSize = size;
  spec.nodeHost = nodeHost(getenv);
  return spec;
}

void placeCollectiveRank(ClusterSpec &spec) {
  spec.role = Role::Trainer;
  spec.trainerId = spec.mpiRank;
  spec.trainers = spec.mpiSize;
}

llvm::Error placeMpiRank(ClusterSpec &spec) {
  if (spec.scheduler.empty() || spec.pserverCount < 1)
    return makeError(
        "rank {0} of {1} (mpirun, srun) learns its role from the rank: give --scheduler "
        "HOST:PORT (rank 0 serves it there) and --pserver-count N (the first N "
        "ranks serve)",
        spec.mpiRank, spec.mpiSize);
  if (spec.mpiSize <= spec.pserverCount)
    return makeError("{0} MPI ranks leave no trainer after {1} pserver(s): run at least {2}",
                     spec.mpiSize, spec.pserverCount, spec.pserverCount + 1);
  bool serves = spec.mpiRank < spec.pserverCount;
  spec.role = serves ? Role::Pserver : Role::Trainer;
  spec.askedId = serves ? spec.mpiRank : spec.mpiRank - spec.pserverCount;
  spec.trainers = spec.mpiSize - spec.pserverCount;
  spec.runsScheduler = spec.mpiRank == 0;
  return llvm::Error::success();
}

} // namespace oar::runtime
