// The scheduler role (as MindSpore's Scheduler and ps-lite's scheduler): one small process at a
// known address that hands every node its place in the job and notices nodes that die.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "runtime/cluster/scheduler_settings.h"
#include "runtime/security/curve.h"
#include "runtime/transport/held_port.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

struct SchedulerOptions {
  std::string endpoint; ///< host:port the nodes were told; served on `bind` when that is set
  std::string bind;
  /// The endpoint's port, held since the launcher picked it: taken over, not bound again.
  std::shared_ptr<HeldPort> heldPort;
  int64_t pservers = 0, trainers = 0;
  /// Every node must give this launch id (OAR_JOB_ID); empty: the first node's, which the rest
  /// must then match.
  std::string jobId;
  /// Every node must register within this long of the scheduler's start.
  std::chrono::milliseconds registerTimeout = kDefaultRegisterTimeout;
  /// Async jobs: a trainer may register while the job runs; it gets the next trainer id (past
  /// the count) and the same endpoints. Pservers must be started with elastic too.
  bool elastic = false;
  /// What the user set: the most trainers of an elastic job, the heartbeat timeout.
  SchedulerSettings settings;
  /// CURVE: the pservers' key pair, and the trainers' public keys; the pservers register with
  /// that key pair, so its public key is accepted too. Without it the scheduler serves this
  /// host only unless `bind` says otherwise (as a pserver does).
  CurveConfig curve;
  std::function<void(const std::string &)> log;
  /// Polled: true stops the scheduler (SIGTERM).
  std::function<bool()> shouldStop;
};

/// Serves registrations until pservers + trainers nodes have registered, gives each its id
/// (the one it asked for, else the lowest free one, in order of arrival) and every pserver's
/// endpoint, then follows their heartbeats: a node that stops sending them, or leaves with an
/// error, is reported to every other node. Returns once every node has left or is gone: success
/// when all left without an error, else an error naming the first node that failed.
llvm::Error runScheduler(const SchedulerOptions &opts);

} // namespace oar::runtime
