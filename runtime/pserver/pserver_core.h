// What a pserver's loop, its message handlers and its step policy share: the program and its
// plan, the trainers, the tables, the server and its ordered replies, and the state of the job.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/pserver/block_threads.h"
#include "runtime/pserver/ordered_replies.h"
#include "runtime/pserver/pserver.h"
#include "runtime/pserver/pserver_checkpoint.h"
#include "runtime/pserver/pserver_peer_memory.h"
#include "runtime/pserver/pserver_plan.h"
#include "runtime/pserver/pserver_tables.h"
#include "runtime/pserver/step_policy.h"
#include "runtime/pserver/trainer_slots.h"
#include "runtime/transport/router_server.h"
#include "support/log_limiter.h"

namespace oar::runtime {

/// A message of a trainer that has not said HELLO since this pserver went back to a checkpoint.
class RolledBackError : public llvm::ErrorInfo<RolledBackError> {
public:
  static char ID;
  RolledBackError(int64_t trainer, int64_t step) : trainer_(trainer), step_(step) {}
  std::string message() const;
  void log(llvm::raw_ostream &os) const override { os << message(); }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  int64_t trainer_, step_;
};

struct PserverCore {
  using Clock = std::chrono::steady_clock;

  PserverCore(const proto::Program &program, Scope &scope, PserverOptions options, PserverRun run);

  // Members are destroyed in reverse: the service threads first (their last tasks still reach
  // everything above them), the server after the replies it sends.
  std::mutex logMutex;    ///< the ZAP handler and service threads log from their own threads
  proto::Program program; ///< a copy: sync's scale attrs follow the number of live trainers
  Scope &scope;
  PserverOptions opts;
  PserverRun run;
  PserverPlan plan;
  Executor exec;
  TrainerSlots trainers;
  /// Same-host trainers: whose memory we read, where they write, what they read of ours.
  PserverPeerMemory peerMemory;
  PserverTables tables;
  std::optional<PserverCheckpoints> checkpoints;
  std::unique_ptr<RouterServer> server;
  OrderedReplies replies;
  /// Why the pserver must end: its own failure (an update that failed), not a sender's.
  std::string fatal;
  /// The step trainer 0 said the job stops after (STOP), or -1: every reply then says so.
  std::atomic<int64_t> stopAfter{-1};
  /// Sync and hybrid: why the job cannot go on (a trainer failed or was replaced); everything
  /// but COMPLETE and HELLO is then refused with it, so every trainer fails instead of training
  /// on without one.
  std::string broken;
  Clock::time_point brokenAt;
  /// When the last message came (the idle timeout).
  Clock::time_point lastActivity = Clock::now();
  /// --nonfinite-grads=skip: updates skipped, and the budget of the lines saying so.
  int64_t skippedUpdates = 0;
  LogLimiter skipLog;
  std::unique_ptr<StepPolicy> steps;
  BlockThreads threads;

  const std::string &endpoint() const { return plan.endpoint; }
  bool sync() const { return plan.mode == Mode::Sync; }
  /// "pserver EP: <line>" to the run's log (any thread).
  void log(const std::string &line);

  /// Replies in the order of the peer's requests (see OrderedReplies).
  void reply(const std::string &peer, const proto::MsgHeader &h, const Tensor *t = nullptr);
  void replyError(const std::string &peer, const proto::MsgHeader &req, const std::string &why);
  /// The refusal a trainer that must say HELLO again gets, naming the step it goes back to.
  void replyRolledBack(const std::string &peer, const proto::MsgHeader &req, int64_t step);
  /// Sends now, on the socket's thread (OrderedReplies' way out).
  void sendNow(const std::string &peer, const proto::MsgHeader &h, const Tensor *t);

  /// --nonfinite-grads=skip: the update `what` describes is not applied, the trainer is answered
  /// OK, and the log says so (within its budget); the count goes in the last line.
  void skipUpdate(const std::string &peer, const proto::MsgHeader &h, const std::string &what);
  /// A trainer is gone for good, so no further step can be the job's (sync and hybrid). Every
  /// waiting trainer is told now, the others at their next message; the pserver ends once all
  /// have completed (with an error), and exits as a failed job.
  void breakJob(const std::string &what);
  /// Fails every waiting trainer with `why` and returns it as the server's error.
  llvm::Error failAll(const std::string &why);
  /// Trainer `t` is lost: never waited for again, and what it may still write is let go.
  void lose(int64_t t);
  /// What a checkpoint written on request logs once it is on disk (from the writer's thread).
  std::function<void()> writtenLog(bool requested, int64_t step);
  /// Whether a checkpoint was asked for since the last call (SIGUSR1).
  bool checkpointRequested();
};

} // namespace oar::runtime
