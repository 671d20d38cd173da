// Every scheduler message, built in one place: what a node sends the scheduler and what the
// scheduler answers.
#pragma once

#include <string>
#include <vector>

#include "ir/node_role.h"
#include "runtime/cluster/scheduler.pb.h"

namespace oar::runtime {

/// A message of `kind` of this oar version, its other fields unset.
proto::SchedMsg schedMessage(proto::SchedKind kind);

/// A node's registration: `role` asking for `askedId` (-1: any), reached at `endpoint` ("" for a
/// trainer that is not), started for `jobId` with these counts.
proto::SchedMsg registerMessage(Role role, int64_t askedId, const std::string &endpoint,
                                const std::string &jobId, int64_t pservers, int64_t trainers);

/// What the scheduler tells a node of its place in the job.
struct Assignment {
  Role role = Role::Trainer;
  int64_t id = -1;
  std::string jobId;
  int64_t pservers = 0, trainers = 0;
  int64_t heartbeatTimeoutMs = 0;
  std::vector<std::string> pserverEndpoints, trainerEndpoints;
};
proto::SchedMsg assignMessage(const Assignment &a);

/// The scheduler's refusal, or a node's failure ending the registration: `why`.
proto::SchedMsg errorMessage(const std::string &why);
/// Tells a node that `role` `id` (at `endpoint`) is gone, and why.
proto::SchedMsg nodeGoneMessage(Role role, int64_t id, const std::string &endpoint,
                                const std::string &why);
/// A node leaving the job: `error` empty when it succeeded.
proto::SchedMsg leaveMessage(const std::string &error);

} // namespace oar::runtime
