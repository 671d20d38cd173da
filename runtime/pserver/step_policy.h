// How a pserver turns its trainers' messages into updates: at a step's barrier (sync) or as they
// arrive (async, GEO). Everything that differs between the two is behind this interface; the
// loop and the handlers (pserver.cc, pserver_handlers.cc) are the same for both.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "runtime/wire/protocol.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

struct PserverCore;

class StepPolicy {
public:
  using Clock = std::chrono::steady_clock;
  virtual ~StepPolicy() = default;

  /// Where training starts: `resumeStep` is the step of the checkpoint the pserver resumed from.
  /// Without one, a checkpointing pserver writes the step a restart goes back to.
  virtual llvm::Error start(std::optional<int64_t> resumeStep) = 0;
  /// Trainer `t`'s HELLO, once its job is checked: may refuse it (sync: a second process in a
  /// slot that trained) or take the pserver back to a checkpoint (sync: `rollback_to`).
  virtual llvm::Error hello(const std::string &peer, const proto::MsgHeader &h, int64_t t) = 0;
  /// The step a checkpointing pserver's HELLO reply gives trainer `t`.
  virtual int64_t helloStep(int64_t t) const = 0;
  /// Whether trainer `t`'s `what` (a gradient, rows, a send_barrier) of `h`'s step is one it may
  /// send now: sync takes only the trainer's open step.
  virtual llvm::Error checkStep(const std::string &what, const proto::MsgHeader &h,
                                int64_t t) const = 0;

  /// A checked gradient of trainer `t` for optimize block `block`: acknowledged, and kept for the
  /// step's barrier (sync) or applied (async, GEO).
  virtual llvm::Error takeGradient(const std::string &peer, Message &m, int64_t t, int block) = 0;
  /// A checked (and acknowledged) push of rows into table `table`.
  virtual void takeRows(std::shared_ptr<Message> push, int64_t t, size_t table) = 0;
  /// --nonfinite-grads=skip: block `block`'s (or table `table`'s) update of this step is skipped.
  virtual void skipBlock(int block) = 0;
  virtual void skipTable(size_t table) = 0;

  /// A param fetch, or a pull of rows of table `table`: answered now, or (sync) once the server
  /// has applied every step trainer `t` closed.
  virtual void fetchParam(const std::string &peer, const proto::MsgHeader &req, int64_t t) = 0;
  virtual void fetchRows(const std::string &peer, const proto::MsgHeader &req, int64_t t,
                         size_t table) = 0;
  /// The end of trainer `t`'s step.
  virtual llvm::Error barrier(const std::string &peer, const proto::MsgHeader &h, int64_t t) = 0;
  /// Trainer `t` completed; `failure` is its error ("" on success).
  virtual void completed(int64_t t, const std::string &failure) = 0;

  /// Whether trainer `t`, an id past the slots, may join the running job (elastic async).
  virtual bool admits(int64_t t) const = 0;
  /// The step every message of a trainer that has not said HELLO again must go back to (sync,
  /// after a rollback), if any.
  virtual std::optional<int64_t> rolledBackTo() const = 0;

  /// This policy's timeouts at `now`; an error ends the pserver.
  virtual llvm::Error checkTimeouts(Clock::time_point now) = 0;
  /// Trainer `t` is gone, the scheduler says (`why`); an error ends the pserver.
  virtual llvm::Error gone(int64_t t, const std::string &why) = 0;
  /// After each message taken: a checkpoint when one is due (async, GEO).
  virtual llvm::Error afterMessage() = 0;
  /// Answers every fetch still waiting with `why`.
  virtual void failWaiting(const std::string &why) = 0;
  /// After the last trainer: the checkpoint of where the job ended.
  virtual llvm::Error finish() = 0;
  /// A line for the last lines of the log ("" for none).
  virtual std::string summary() const = 0;
};

/// Sync: gradients are kept per trainer and applied, averaged over the live trainers, once
/// every live trainer has closed the step (sync_steps.cc).
std::unique_ptr<StepPolicy> makeSyncSteps(PserverCore &core);
/// Async and GEO: every gradient or delta is applied on arrival by its block's thread
/// (arrival_steps.cc).
std::unique_ptr<StepPolicy> makeArrivalSteps(PserverCore &core);

} // namespace oar::runtime
