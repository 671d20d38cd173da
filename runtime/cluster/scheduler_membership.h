// The scheduler's record of a job's nodes, without sockets: which registrations it takes, the ids
// it gives, who is still running. The scheduler feeds it every message with its sender; the fuzz
// target fuzz/scheduler_fuzz.cc feeds it bytes.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "ir/node_role.h"
#include "runtime/cluster/scheduler.h"
#include "runtime/cluster/scheduler.pb.h"

namespace oar::runtime {

/// A scheduler message is small: a registration holds a few names.
inline constexpr int64_t kMaxSchedMessage = 64 * 1024;

/// `bytes` as a scheduler message of this oar version, or nullopt.
std::optional<proto::SchedMsg> parseSchedMsg(const void *bytes, size_t size);

struct Member {
  std::string identity;      ///< ZeroMQ routing id of its connection
  Role role = Role::Trainer; ///< a pserver or a trainer
  int64_t askedId = -1, id = -1;
  std::string endpoint;
  std::chrono::steady_clock::time_point lastSeen;
  bool left = false, gone = false;
  std::string name() const;
};

class SchedulerMembership {
public:
  explicit SchedulerMembership(const SchedulerOptions &opts) : opts_(opts), jobId_(opts.jobId) {}

  /// Why a REGISTER `msg` from connection `identity`, whose peer holds CURVE key `key` ("" without
  /// keys), cannot join while nodes register, or "". Nothing of a refused node is kept.
  std::string registrationRefusal(const std::string &identity, const proto::SchedMsg &msg,
                                  const std::string &key) const;
  /// Why a node that sent `msg` was started for another job size than the scheduler, or "".
  std::string countsRefusal(const proto::SchedMsg &msg) const;
  /// Takes a registration that registrationRefusal passed.
  void add(const std::string &identity, const proto::SchedMsg &msg);
  /// Whether every node of the job has registered.
  bool full() const;
  /// Ids asked for are given; the others get the lowest free ids in order of arrival.
  void assignIds();
  /// Elastic: why a trainer registering while the job runs cannot join, or "".
  std::string lateRefusal(const proto::SchedMsg &msg, const std::string &key) const;
  /// Elastic: takes a late trainer with the id after the highest given.
  Member &addLate(const std::string &identity);

  /// Every pserver's endpoint, by id (after assignIds).
  std::vector<std::string> pserverEndpoints() const;
  /// Every trainer's endpoint, by id (after assignIds); empty when no trainer gave one.
  std::vector<std::string> trainerEndpoints() const;
  /// "only P of S pserver(s) and T of W trainer(s)".
  std::string registeredSoFar() const;
  /// Trainers registered that have neither left nor gone.
  int64_t runningTrainers() const;
  Member *memberOf(const std::string &identity);
  std::vector<Member> &members() { return members_; }
  const std::string &jobId() const { return jobId_; }

private:
  /// With CURVE keys, why a peer holding `key` cannot take `role`, or "": a pserver holds the
  /// pservers' key pair, a trainer a key on the trainers' list.
  std::string keyRefusal(Role role, const std::string &key) const;

  const SchedulerOptions &opts_;
  std::string jobId_;
  std::vector<Member> members_;
};

} // namespace oar::runtime
