// Which node this process is: from flags, Paddle's launch environment or TF_CONFIG.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// This node's place in the job. An empty role means a single-machine run.
struct ClusterSpec {
  std::string role; ///< "trainer" | "pserver" | ""
  int64_t trainerId = 0;
  int64_t trainers = 0; ///< 0: unknown
  std::vector<std::string> pservers;
  std::string currentEndpoint; ///< a pserver's own host:port
  /// Which launch of a job this node belongs to (OAR_JOB_ID, set by oar-launch): a pserver
  /// refuses trainers of another launch, even of the same model. Empty: not checked.
  std::string jobId;
};

using GetEnv = std::function<const char *(const char *)>;

/// Reads, in order of preference: TF_CONFIG (cluster.ps, cluster.worker, task.type,
/// task.index), then Paddle's PADDLE_TRAINING_ROLE, PADDLE_PSERVERS_IP_PORT_LIST (or
/// PADDLE_PSERVER_IPS with PADDLE_PSERVER_PORT), PADDLE_TRAINERS, PADDLE_TRAINER_ID,
/// PADDLE_CURRENT_IP / PADDLE_CURRENT_ENDPOINT; and OAR_JOB_ID in either case. Errors name the
/// variable.
llvm::Expected<ClusterSpec> clusterFromEnv(const GetEnv &getenv);

/// The index of the pserver this spec is, among its pservers; errors name the endpoint.
llvm::Expected<size_t> pserverIndex(const ClusterSpec &spec);

} // namespace oar::runtime
