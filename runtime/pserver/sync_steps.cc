// Sync steps: each trainer's gradients are kept until every live trainer has closed the step;
// then the optimize blocks average the live trainers' copies and update, and the fetches that
// waited for the step are answered. A restarted pserver brings the job back to a checkpoint.
#include <cstring>
#include <set>
#include <vector>

#include "ir/names.h"
#include "runtime/pserver/pserver_core.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// A fetch waiting until the trainer's last closed step has been applied.
struct PendingGet {
  std::string peer;
  proto::MsgHeader header;
  size_t table = 0; ///< a PULL_ROWS's table
};

class SyncSteps final : public StepPolicy {
public:
  explicit SyncSteps(PserverCore &core) : core_(core) {}

  llvm::Error start(std::optional<int64_t> resumeStep) override {
    if (resumeStep) {
      optimizedRounds_ = *resumeStep;
      for (TrainerSlot &s : core_.trainers)
        s.barrierRound = s.lastStep = *resumeStep;
    } else if (core_.checkpoints) { // the step a restart before the first checkpoint goes back to
      if (llvm::Error err = core_.checkpoints->write(0, core_.program, core_.scope, core_.tables))
        return makeError("pserver {0}: {1}", core_.endpoint(), llvm::toString(std::move(err)));
    }
    if (core_.checkpoints) // it starts where the trainers' rollback requests point
      rolledBackTo_ = optimizedRounds_;
    return llvm::Error::success();
  }

  llvm::Error hello(const std::string &peer, const proto::MsgHeader &h, int64_t t) override {
    // Without checkpoints nothing takes a sync trainer back once it trained: a HELLO for its
    // slot from another connection is a restart or a second process, and both break the job.
    TrainerSlot &s = core_.trainers[t];
    if (!core_.checkpoints && s.live() && !s.helloPeer.empty() && s.helloPeer != peer &&
        s.barrierRound > 0) {
      core_.lose(t); // the process that trained in the slot is not waited for any more
      core_.breakJob(llvm::formatv("trainer {0} said HELLO again from another connection after "
                                   "training: restarted, or a second process took its slot",
                                   t)
                         .str());
      return makeError("{0}", core_.broken);
    }
    if (h.has_rollback_to())
      return rollback(h.rollback_to(), t);
    return llvm::Error::success();
  }

  int64_t helloStep(int64_t) const override { return optimizedRounds_; }

  llvm::Error checkStep(const std::string &what, const proto::MsgHeader &h,
                        int64_t t) const override {
    if (h.step() != core_.trainers[t].barrierRound)
      return makeError("{0} for step {1}, which is not trainer {2}'s step", what, h.step(), t);
    return llvm::Error::success();
  }

  llvm::Error takeGradient(const std::string &peer, Message &m, int64_t t, int) override {
    const proto::MsgHeader &h = m.header;
    core_.reply(peer, makeHeader(proto::REPLY_OK, h.var(), t, h.step()));
    // Kept per trainer until the step's barrier.
    Tensor &copy = core_.scope.get(trainerCopyName(h.var(), static_cast<unsigned>(t)));
    if (h.landed()) // the trainer wrote it there itself
      return llvm::Error::success();
    if (core_.peerMemory.hasLanding(t, h.var())) // its buffer keeps the address it was given
      std::memcpy(copy.raw(), m.payload.data(), copy.bytes());
    else
      m.moveInto(copy);
    return llvm::Error::success();
  }

  void takeRows(std::shared_ptr<Message> push, int64_t t, size_t table) override {
    core_.tables.keep(table, t, std::move(push)); // summed with the others' at the barrier
  }

  void skipBlock(int block) override { skippedBlocks_.insert(block); }
  void skipTable(size_t table) override { skippedTables_.insert(table); }

  void fetchParam(const std::string &peer, const proto::MsgHeader &req, int64_t t) override {
    if (optimizedRounds_ < core_.trainers[t].barrierRound)
      pending_.push_back({peer, req});
    else
      replyParam(peer, req);
  }

  void fetchRows(const std::string &peer, const proto::MsgHeader &req, int64_t t,
                 size_t table) override {
    if (optimizedRounds_ < core_.trainers[t].barrierRound)
      pending_.push_back({peer, req, table});
    else
      replyRows(peer, req, table);
  }

  llvm::Error barrier(const std::string &peer, const proto::MsgHeader &h, int64_t t) override {
    if (llvm::Error err = checkStep("send_barrier", h, t))
      return err;
    ++core_.trainers[t].barrierRound;
    core_.reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
    tryOptimizeOrFail();
    return llvm::Error::success();
  }

  void completed(int64_t t, const std::string &failure) override {
    if (!failure.empty() && core_.broken.empty())
      core_.breakJob(llvm::formatv("trainer {0} left after an error ({1})", t, failure).str());
    if (core_.broken.empty())
      tryOptimizeOrFail();
  }

  bool admits(int64_t) const override { return false; }
  std::optional<int64_t> rolledBackTo() const override { return rolledBackTo_; }

  llvm::Error checkTimeouts(Clock::time_point now) override {
    if (!roundWaitStart_ || now - *roundWaitStart_ <= core_.run.timeouts.barrier)
      return llvm::Error::success();
    // The time actually waited, which a slow loop turn can make exceed the timeout.
    double waited = std::chrono::duration<double>(now - *roundWaitStart_).count();
    std::vector<int64_t> missing = core_.trainers.ids(
        [&](const TrainerSlot &s) { return s.live() && s.barrierRound <= optimizedRounds_; });
    return core_.failAll(llvm::formatv("sync barrier of step {0} timed out after {1:f2} s: no "
                                       "send_barrier from trainer(s) {2}",
                                       optimizedRounds_, waited, TrainerSlots::list(missing))
                             .str());
  }

  llvm::Error gone(int64_t t, const std::string &why) override {
    return core_.failAll(
        llvm::formatv("trainer {0} is gone, the scheduler says: {1}", t, why).str());
  }

  llvm::Error afterMessage() override { return llvm::Error::success(); }

  void failWaiting(const std::string &why) override {
    for (PendingGet &g : pending_)
      core_.replyError(g.peer, g.header, why);
    pending_.clear();
  }

  llvm::Error finish() override {
    // The job's last step, so that starting it again finds it done instead of training its tail.
    if (core_.checkpoints && core_.checkpoints->latest() != optimizedRounds_)
      if (llvm::Error err =
              core_.checkpoints->write(optimizedRounds_, core_.program, core_.scope, core_.tables))
        return makeError("pserver {0}: {1}", core_.endpoint(), llvm::toString(std::move(err)));
    return llvm::Error::success();
  }

  std::string summary() const override { return ""; }

private:
  /// Params do not change until every trainer has fetched: served without a copy.
  void replyParam(const std::string &peer, const proto::MsgHeader &req) {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    if (const Tensor *param = core_.scope.find(req.var())) {
      describeTensor(h, *param); // sent as it is, without a copy
      core_.peerMemory.serve(req, h, *param);
      core_.reply(peer, h, param);
    }
  }

  /// The table does not change until the step's barrier: the socket's thread reads it.
  void replyRows(const std::string &peer, const proto::MsgHeader &req, size_t table) {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    Tensor rows = core_.tables.pull(table, req);
    core_.reply(peer, h, &rows);
  }

  /// The scale of each optimize block averages over the trainers still live.
  void setAverageOver(int64_t trainers) {
    if (trainers == liveForScale_)
      return;
    liveForScale_ = trainers;
    for (int b = 1; b < core_.program.blocks_size(); ++b)
      for (proto::Op &op : *core_.program.mutable_blocks(b)->mutable_ops())
        if (op.type() == "scale")
          setAttr(op, "scale", AttrValue(1.0f / static_cast<float>(trainers)));
  }

  /// Trainers that left contribute nothing: their copies are zeroed.
  void zeroCopiesOfTheGone() {
    for (int64_t t = 0; t < core_.plan.fanin; ++t)
      if (!core_.trainers[t].live()) {
        core_.peerMemory.retire(t, core_.scope); // it may still write where it was told to
        for (const auto &entry : core_.plan.gradToBlock)
          if (Tensor *copy =
                  core_.scope.find(trainerCopyName(entry.getKey(), static_cast<unsigned>(t))))
            std::fill_n(static_cast<std::byte *>(copy->raw()), copy->bytes(), std::byte{0});
      }
  }

  /// Runs step `round`'s updates on the service threads and waits for them.
  llvm::Error applyStep(int64_t liveCount) {
    zeroCopiesOfTheGone();
    setAverageOver(liveCount);
    ServiceThreads &workers = core_.threads.workers();
    for (const auto &entry : core_.plan.gradToBlock)
      if (!skippedBlocks_.count(entry.getValue()))
        workers.post(core_.threads.ofBlock(entry.getValue()), [this, block = entry.getValue()] {
          return addContext(core_.exec.run(core_.program, core_.scope, block),
                            "pserver " + core_.endpoint());
        });
    std::vector<bool> liveNow(core_.plan.fanin);
    for (int64_t t = 0; t < core_.plan.fanin; ++t)
      liveNow[t] = core_.trainers[t].live();
    for (size_t i = 0; i < core_.tables.size(); ++i)
      workers.post(core_.threads.ofTable(i),
                   [this, i, liveNow, skip = skippedTables_.count(i) > 0] {
                     if (skip)
                       core_.tables.skipStep(i);
                     else
                       core_.tables.applyStep(i, liveNow);
                     return llvm::Error::success();
                   });
    skippedBlocks_.clear();
    skippedTables_.clear();
    return workers.drain();
  }

  /// Applies the next steps while every live trainer has closed them.
  llvm::Error tryOptimize() {
    for (;;) {
      int64_t round = optimizedRounds_ + 1;
      std::vector<int64_t> liveIds;
      bool ready = true, someoneWaits = false;
      for (int64_t t = 0; t < core_.plan.fanin; ++t) {
        const TrainerSlot &s = core_.trainers[t];
        if (!s.live())
          continue;
        liveIds.push_back(t);
        ready &= s.barrierRound >= round;
        someoneWaits |= s.barrierRound >= round;
      }
      if (liveIds.empty() || !ready) {
        if (someoneWaits && !roundWaitStart_)
          roundWaitStart_ = Clock::now();
        return llvm::Error::success();
      }
      if (llvm::Error err = applyStep(static_cast<int64_t>(liveIds.size())))
        return err;
      optimizedRounds_ = round;
      roundWaitStart_.reset();
      if (rolledBackTo_ && round > *rolledBackTo_)
        rolledBackTo_.reset();
      if (llvm::Error err = checkpointAfter(round))
        return err;
      serveReadyGets();
    }
  }

  /// A checkpoint every checkpointEvery steps, or on request.
  llvm::Error checkpointAfter(int64_t round) {
    if (!core_.checkpoints)
      return llvm::Error::success();
    bool requested = core_.checkpointRequested(); // SIGUSR1
    int64_t every = core_.run.checkpointEvery;
    if (!requested && !(every > 0 && round % every == 0))
      return llvm::Error::success();
    return core_.checkpoints->write(round, core_.program, core_.scope, core_.tables, {},
                                    core_.writtenLog(requested, round));
  }

  /// An optimize failure is the server's own problem, not the sender's: remembered.
  void tryOptimizeOrFail() {
    if (llvm::Error err = tryOptimize())
      core_.fatal = llvm::toString(std::move(err));
  }

  void serveReadyGets() {
    std::vector<PendingGet> still;
    for (PendingGet &g : pending_) {
      if (optimizedRounds_ < core_.trainers[g.header.trainer_id()].barrierRound)
        still.push_back(std::move(g));
      else if (g.header.kind() == proto::PULL_ROWS)
        replyRows(g.peer, g.header, g.table);
      else
        replyParam(g.peer, g.header);
    }
    pending_ = std::move(still);
  }

  /// Goes back to the checkpoint of `step` (a pserver of the job restarted from it), at trainer
  /// `by`'s request. Every trainer then sends from step + 1 again: what they sent for later
  /// steps is dropped, and each must say HELLO again before anything else is taken from it.
  llvm::Error rollback(int64_t step, int64_t by) {
    if (!core_.checkpoints)
      return makeError("trainer {0} asks to go back to step {1}, but this pserver writes no "
                       "checkpoints (--checkpoint-dir)",
                       by, step);
    if (rolledBackTo_ == step)
      return llvm::Error::success(); // another trainer asked first
    if (step > optimizedRounds_)
      return makeError("trainer {0} asks to go back to step {1}, which this pserver has not "
                       "applied",
                       by, step);
    if (step < optimizedRounds_) {
      PserverTables fresh; // rows added since then must go too
      if (llvm::Error err =
              fresh.init(core_.program, core_.scope, core_.plan.fanin, core_.opts.tableBudget))
        return err;
      if (llvm::Error err = core_.checkpoints->load(step, core_.program, core_.scope, fresh))
        return err;
      core_.tables = std::move(fresh);
    }
    // Checkpoints past `step` belong to the steps now undone: a later restart must not go on
    // from one of them.
    if (llvm::Error err = core_.checkpoints->dropAfter(step))
      return err;
    core_.tables.forgetKept();
    skippedBlocks_.clear(); // the redone steps bring their gradients again
    skippedTables_.clear();
    optimizedRounds_ = step;
    for (TrainerSlot &s : core_.trainers)
      s.barrierRound = s.lastStep = step;
    roundWaitStart_.reset();
    for (PendingGet &g : pending_)
      core_.replyRolledBack(g.peer, g.header, step);
    pending_.clear();
    for (int64_t t = 0; t < core_.plan.fanin; ++t)
      if (t != by)
        core_.trainers[t].helloPeer.clear();
    rolledBackTo_ = step;
    core_.log(llvm::formatv("went back to checkpoint step {0} at trainer {1}'s request (a "
                            "pserver of the job restarted from it)",
                            step, by)
                  .str());
    return llvm::Error::success();
  }

  PserverCore &core_;
  int64_t optimizedRounds_ = 0, liveForScale_ = 0;
  std::vector<PendingGet> pending_;
  /// When the first trainer closed the step being waited for.
  std::optional<Clock::time_point> roundWaitStart_;
  /// The step this pserver last went back to at a trainer's request, until it moves on: the
  /// other trainers' requests for the same step find it done.
  std::optional<int64_t> rolledBackTo_;
  /// The optimize blocks and tables whose update this step skips (--nonfinite-grads=skip).
  std::set<int> skippedBlocks_;
  std::set<size_t> skippedTables_;
};

} // namespace

std::unique_ptr<StepPolicy> makeSyncSteps(PserverCore &core) {
  return std::make_unique<SyncSteps>(core);
}

} // namespace oar::runtime
