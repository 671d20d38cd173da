// Async and GEO steps: each gradient (or GEO delta) is applied on arrival by its block's service
// thread, and a fetch gets the param's version after the updates queued before it. Trainers
// keep their own clocks; the job's step is their mean, which checkpoints follow.
#include <limits>

#include "runtime/pserver/param_versions.h"
#include "runtime/pserver/pserver_core.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// Elastic async: at most this many trainer ids, joined ones included.
constexpr int64_t kMaxElasticTrainers = 1024;

class ArrivalSteps final : public StepPolicy {
public:
  explicit ArrivalSteps(PserverCore &core) : core_(core) {
    versions_.init(core_.program, core_.plan.paramBlocks, core_.scope);
  }

  llvm::Error start(std::optional<int64_t> resumeStep) override {
    if (resumeStep) {
      // Each trainer goes on from where this checkpoint saw it (the HELLO reply says).
      if (llvm::Error err = resumeTrainerSteps(*resumeStep))
        return makeError("pserver {0}: {1}", core_.endpoint(), llvm::toString(std::move(err)));
      nextCheckpoint_ = nextCheckpointAfter(*resumeStep);
    } else if (core_.checkpoints) { // the step a restart before the first checkpoint goes back to
      if (llvm::Error err = core_.checkpoints->write(0, core_.program, core_.scope, core_.tables,
                                                     trainerStepFields()))
        return makeError("pserver {0}: {1}", core_.endpoint(), llvm::toString(std::move(err)));
    }
    return llvm::Error::success();
  }

  llvm::Error hello(const std::string &, const proto::MsgHeader &h, int64_t t) override {
    if (h.has_rollback_to()) // only sync pservers go back to a checkpoint
      return makeError("trainer {0} asks to go back to step {1}, but a {2} pserver never goes "
                       "back",
                       t, h.rollback_to(), modeName(core_.plan.mode));
    return llvm::Error::success();
  }

  int64_t helloStep(int64_t t) const override { return trainerStep(t); }

  llvm::Error checkStep(const std::string &, const proto::MsgHeader &, int64_t) const override {
    return llvm::Error::success(); // each trainer's clock is its own
  }

  llvm::Error takeGradient(const std::string &peer, Message &m, int64_t t, int block) override {
    const proto::MsgHeader &h = m.header;
    if (h.landed())
      return applyLanded(peer, t, h, block);
    core_.reply(peer, makeHeader(proto::REPLY_OK, h.var(), t, h.step()));
    // Applied by the block's thread, before any later get of what the block updates.
    auto msg = std::make_shared<Message>(std::move(m));
    core_.threads.workers().post(core_.threads.ofBlock(block), [this, msg, block] {
      msg->moveInto(*core_.scope.find(msg->header.var()));
      return applyUpdate(block);
    });
    return llvm::Error::success();
  }

  void takeRows(std::shared_ptr<Message> push, int64_t, size_t table) override {
    core_.threads.workers().post(core_.threads.ofTable(table), [this, push, table] {
      core_.tables.apply(table, *push);
      return llvm::Error::success();
    });
  }

  void skipBlock(int) override {} // nothing of a skipped update was kept
  void skipTable(size_t) override {}

  /// Updates may land while ZeroMQ sends (or the trainer reads): the thread that updates the
  /// param shares its version between two of its updates, and never writes it again.
  void fetchParam(const std::string &peer, const proto::MsgHeader &req, int64_t) override {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    std::shared_ptr<OrderedReplies::Slot> slot = core_.replies.reserve(peer);
    core_.threads.workers().post(core_.threads.ofVar(req.var()),
                                 [this, slot, h, req]() mutable -> llvm::Error {
                                   Tensor version = *core_.scope.find(h.var());
                                   describeTensor(h, version);
                                   core_.peerMemory.serve(req, h, version);
                                   core_.replies.fill(slot, h, std::move(version));
                                   return llvm::Error::success();
                                 });
  }

  /// The table's thread reads its rows, between two of its updates.
  void fetchRows(const std::string &peer, const proto::MsgHeader &req, int64_t,
                 size_t table) override {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    std::shared_ptr<OrderedReplies::Slot> slot = core_.replies.reserve(peer);
    auto request = std::make_shared<proto::MsgHeader>(req);
    core_.threads.workers().post(core_.threads.ofTable(table),
                                 [this, slot, h, request, table]() -> llvm::Error {
                                   core_.replies.fill(slot, h, core_.tables.pull(table, *request));
                                   return llvm::Error::success();
                                 });
  }

  llvm::Error barrier(const std::string &peer, const proto::MsgHeader &h, int64_t t) override {
    core_.reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
    return llvm::Error::success();
  }

  void completed(int64_t t, const std::string &failure) override {
    // A hybrid job's trainers fail together: one that left after an error ends the job.
    if (core_.run.hybrid && !failure.empty() && core_.broken.empty())
      core_.breakJob(llvm::formatv("trainer {0} left after an error ({1})", t, failure).str());
  }

  bool admits(int64_t t) const override {
    return t < kMaxElasticTrainers && core_.run.elastic && core_.plan.mode == Mode::Async;
  }
  std::optional<int64_t> rolledBackTo() const override { return std::nullopt; }

  /// A trainer silent far longer than its peers is lost.
  llvm::Error checkTimeouts(Clock::time_point now) override {
    auto barrier = core_.run.timeouts.barrier;
    for (int64_t t = 0; t < core_.trainers.size(); ++t) {
      const TrainerSlot &s = core_.trainers[t];
      if (s.live() && now - s.lastSeen > barrier && now - core_.lastActivity < barrier) {
        core_.lose(t);
        core_.log(llvm::formatv("trainer {0} sent nothing for {1:f2} s while others trained; "
                                "treating it as lost",
                                t, std::chrono::duration<double>(now - s.lastSeen).count())
                      .str());
      }
    }
    return llvm::Error::success();
  }

  llvm::Error gone(int64_t t, const std::string &why) override {
    core_.lose(t);
    core_.log(
        llvm::formatv("trainer {0} is gone, the scheduler says: {1}; treating it as lost", t, why)
            .str());
    return llvm::Error::success();
  }

  /// A checkpoint every checkpointEvery steps of the job (or on request), once every update
  /// queued before it has landed.
  llvm::Error afterMessage() override {
    if (!core_.checkpoints)
      return llvm::Error::success();
    int64_t step = jobStep();
    bool requested = core_.checkpointRequested();
    if (!requested && step < nextCheckpoint_)
      return llvm::Error::success();
    if (llvm::Error err = core_.threads.workers().drain())
      return err;
    if (llvm::Error err =
            core_.checkpoints->write(step, core_.program, core_.scope, core_.tables,
                                     trainerStepFields(), core_.writtenLog(requested, step)))
      return err;
    nextCheckpoint_ = nextCheckpointAfter(step);
    return llvm::Error::success();
  }

  void failWaiting(const std::string &) override {} // nothing waits for a step here

  /// Each trainer's last step: a restart trains no more.
  llvm::Error finish() override {
    if (core_.checkpoints)
      if (llvm::Error err = core_.checkpoints->write(jobStep(), core_.program, core_.scope,
                                                     core_.tables, trainerStepFields()))
        return makeError("pserver {0}: {1}", core_.endpoint(), llvm::toString(std::move(err)));
    return llvm::Error::success();
  }

  std::string summary() const override {
    if (versions_.freshVersions() + versions_.copiedVersions() == 0)
      return "";
    return llvm::formatv("param versions: {0} updates wrote a new version beside one being read, "
                         "{1} copied it first",
                         versions_.freshVersions(), versions_.copiedVersions())
        .str();
  }

private:
  /// Runs optimize block `block` on its service thread (see ParamVersions).
  llvm::Error applyUpdate(int block) {
    return addContext(versions_.apply(core_.exec, core_.program, block, core_.scope),
                      "pserver " + core_.endpoint());
  }

  /// Applies the gradient trainer `t` wrote into its landing, there. The acknowledgement, after
  /// which the trainer may write the landing again, waits until the block has read it (the
  /// block's later gets waited for it anyway).
  llvm::Error applyLanded(const std::string &peer, int64_t t, const proto::MsgHeader &h,
                          int block) {
    std::shared_ptr<OrderedReplies::Slot> slot = core_.replies.reserve(peer);
    core_.threads.workers().post(
        core_.threads.ofBlock(block),
        [this, slot, block, h, landing = core_.peerMemory.landing(t, h.var())]() -> llvm::Error {
          *core_.scope.find(h.var()) = landing;
          llvm::Error err = applyUpdate(block);
          proto::MsgHeader ack = makeHeader(proto::REPLY_OK, h.var(), h.trainer_id(), h.step());
          if (!err) {
            core_.replies.fill(slot, ack, Tensor());
            return llvm::Error::success();
          }
          std::string why = llvm::toString(std::move(err));
          ack.set_kind(proto::REPLY_ERROR);
          ack.set_error(why);
          core_.replies.fill(slot, ack, Tensor());
          return makeError("{0}", why);
        });
    return llvm::Error::success();
  }

  /// Where trainer `t` is, as far as this pserver knows (after a restart, at least where its
  /// checkpoint saw it: a HELLO restarts the trainer's clock at 0).
  int64_t trainerStep(int64_t t) const {
    const TrainerSlot &s = core_.trainers[t];
    return std::max(s.lastStep, s.resumedFrom);
  }
  /// The job's step is the trainers' mean step.
  int64_t jobStep() const {
    int64_t sum = 0;
    for (int64_t t = 0; t < core_.plan.fanin; ++t)
      sum += trainerStep(t);
    return sum / std::max<int64_t>(core_.plan.fanin, 1);
  }
  int64_t nextCheckpointAfter(int64_t step) const {
    int64_t every = core_.run.checkpointEvery;
    return every > 0 ? (step / every + 1) * every : std::numeric_limits<int64_t>::max();
  }
  /// Each trainer's step, as a checkpoint's MANIFEST records it.
  std::map<std::string, std::string> trainerStepFields() const {
    std::vector<std::string> steps;
    for (int64_t t = 0; t < core_.plan.fanin; ++t)
      steps.push_back(std::to_string(trainerStep(t)));
    return {{"trainer_steps", llvm::join(steps, ",")}};
  }
  llvm::Error resumeTrainerSteps(int64_t step) {
    std::map<std::string, std::string> fields = core_.checkpoints->fields(step);
    llvm::SmallVector<llvm::StringRef, 8> steps;
    llvm::StringRef(fields["trainer_steps"]).split(steps, ',');
    if (static_cast<int64_t>(steps.size()) != core_.plan.fanin)
      return makeError("{0}: records {1} trainers' steps, this job has {2}",
                       core_.checkpoints->pathOf(step), steps.size(), core_.plan.fanin);
    for (int64_t t = 0; t < core_.plan.fanin; ++t) {
      int64_t &from = core_.trainers[t].resumedFrom;
      if (steps[t].getAsInteger(10, from) || from < 0)
        return makeError("{0}: trainer {1}'s step \"{2}\" is not a step",
                         core_.checkpoints->pathOf(step), t, steps[t]);
    }
    return llvm::Error::success();
  }

  PserverCore &core_;
  /// Fetches share a param's version; updates beside it write a new one.
  ParamVersions versions_;
  /// The job step of the next checkpoint.
  int64_t nextCheckpoint_ = 0;
};

} // namespace

std::unique_ptr<StepPolicy> makeArrivalSteps(PserverCore &core) {
  return std::make_unique<ArrivalSteps>(core);
}

} // namespace oar::runtime
