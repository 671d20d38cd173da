// A node's side of the scheduler: register, learn its place in the job, send heartbeats, hear
// which other node is gone.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ir/node_role.h"
#include "runtime/cluster/scheduler_timeouts.h"
#include "runtime/security/curve.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

struct SchedulerRequest {
  std::string scheduler;     ///< host:port
  Role role = Role::Trainer; ///< a pserver or a trainer
  int64_t askedId = -1;      ///< -1: any
  std::string endpoint;      ///< a pserver's host:port (a collective or hybrid trainer's, too)
  std::string jobId;
  int64_t pservers = 0, trainers = 0;
  /// CURVE: a trainer's own pair and the pservers' public key; a pserver's own pair (the
  /// scheduler serves with it too). Empty: plain TCP.
  CurveConfig curve;
  /// Registration, waiting for every other node included.
  std::chrono::milliseconds timeout = kDefaultRegisterTimeout;
  std::function<bool()> shouldStop;
};

/// What the scheduler gave this node.
struct SchedulerAssignment {
  int64_t id = -1;
  std::vector<std::string> pservers; ///< by pserver id
  int64_t trainers = 0;
  /// By trainer id, where the trainers registered endpoints (collective and hybrid jobs).
  std::vector<std::string> trainerEndpoints;
  std::string jobId;
};

/// The connection to the scheduler for the node's life: a thread sends a heartbeat every second
/// and logs each node the scheduler reports gone. leave() (or the destructor, as a failure) tells
/// the scheduler this node ended.
class SchedulerLink {
public:
  /// Registers and waits for the assignment (up to the request's timeout). Errors name the
  /// scheduler and say why it refused.
  static llvm::Expected<std::unique_ptr<SchedulerLink>>
  join(const SchedulerRequest &request, std::function<void(const std::string &)> log);
  ~SchedulerLink();

  const SchedulerAssignment &assignment() const { return assignment_; }
  /// Says this node ended: `error` empty for success. Stops the heartbeats.
  void leave(const std::string &error);
  /// The trainers the scheduler has reported gone so far, with why (thread-safe).
  std::map<int64_t, std::string> goneTrainers() const;

  struct Impl;

private:
  explicit SchedulerLink(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  SchedulerAssignment assignment_;
  std::thread heartbeats_;
  std::atomic<bool> stop_{false};
  std::string leaveError_ = "it exited before finishing";
  bool left_ = false;
};

struct ClusterSpec;
class HeldPort;

/// Joins the job through spec.scheduler: a pserver serves spec.currentEndpoint if set, else a
/// free port on spec.nodeHost, held in `ownPort` until the pserver takes it over (NodeOptions::
/// heldPort); on return the spec holds this node's id, the trainer count and every pserver's
/// endpoint, as if they had been given. Keep the link for the node's life.
llvm::Expected<std::unique_ptr<SchedulerLink>>
joinThroughScheduler(ClusterSpec &spec, const CurveConfig &curve, std::chrono::milliseconds timeout,
                     std::function<void(const std::string &)> log, std::function<bool()> shouldStop,
                     std::shared_ptr<HeldPort> &ownPort);

} // namespace oar::runtime
