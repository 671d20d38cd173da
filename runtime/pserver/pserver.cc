// The pserver loop: its start (plan, tables, state, threads, socket), the loop that takes
// messages until every trainer completed, its timeouts, and its end.
#include "runtime/pserver/pserver.h"

#include <cstring>

#include "runtime/pserver/pserver_core.h"
#include "runtime/pserver/pserver_handlers.h"
#include "support/error.h"
#include "support/memory_policy.h"
#include "support/signals.h"
#include "train/learning_rate.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

using Clock = std::chrono::steady_clock;

namespace {
double secondsOf(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
} // namespace

struct PserverLoop::Impl {
  PserverCore core;
  std::function<void(const std::string &)> onBound;
  /// What the table budget had done when the log last said (see logTableRoom).
  RoomCounts roomLogged;
  std::optional<Clock::time_point> roomLoggedAt;

  Impl(const proto::Program &p, Scope &s, PserverOptions o, PserverRun r)
      : core(p, s, std::move(o), std::move(r)) {}

  /// Everything before the first message: the plan, the tables, the state to start from, the
  /// step policy, the service threads, the trainers and the socket.
  llvm::Error init() {
    auto plan = PserverPlan::read(core.program);
    if (!plan)
      return plan.takeError();
    core.plan = std::move(*plan);
    if (!core.replies.valid())
      return makeError("pserver {0}: cannot make an eventfd: {1}", core.endpoint(),
                       strerror(errno));
    if (llvm::Error err =
            core.tables.init(core.program, core.scope, core.plan.fanin, core.opts.tableBudget))
      return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
    std::optional<int64_t> resumeStep;
    if (llvm::Error err = loadState().moveInto(resumeStep))
      return err;
    if (core.run.learningRate)
      if (llvm::Error err = setLearningRate(core.program, core.scope, *core.run.learningRate))
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
    core.steps = core.sync() ? makeSyncSteps(core) : makeArrivalSteps(core);
    core.threads.assign(core.program, core.plan, core.tables.size(), core.run.serviceThreads,
                        core.scope);
    core.trainers = TrainerSlots(core.plan.fanin);
    core.peerMemory.setSync(core.sync());
    core.peerMemory.resize(static_cast<size_t>(core.plan.fanin));
    if (llvm::Error err = core.steps->start(resumeStep))
      return err;
    return bindSocket();
  }

  /// The params and tables to start from: the newest checkpoint (its step returned), else
  /// --load's tables (the blocks were loaded before the loop started).
  llvm::Expected<std::optional<int64_t>> loadState() {
    const PserverRun &run = core.run;
    std::optional<int64_t> resumeStep;
    if (!run.checkpointDir.empty()) {
      if (run.elastic)
        return makeError("pserver {0}: checkpoints (--checkpoint-dir) record where each of the "
                         "job's trainers was; trainers joining an elastic job have no place "
                         "there",
                         core.endpoint());
      core.checkpoints.emplace(run.checkpointDir, core.program.dist().checkpoint_digest(),
                               std::max(2, run.checkpointKeep));
      resumeStep = core.checkpoints->latest();
    }
    if (resumeStep) {
      if (llvm::Error err =
              core.checkpoints->load(*resumeStep, core.program, core.scope, core.tables))
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
      core.log(llvm::formatv("resumed from checkpoint {0}", core.checkpoints->pathOf(*resumeStep))
                   .str());
    } else if (run.loadFrom) {
      LoadReport report = run.loaded; // the blocks, loaded before the loop started
      if (llvm::Error err = core.tables.load(*run.loadFrom, /*ownPartOnly=*/false, report))
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
      if (llvm::Error err = checkStateComplete(report, *run.loadFrom, run.training))
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
      core.log(report.summary(*run.loadFrom, run.training));
    }
    return resumeStep;
  }

  /// The largest frame a trainer may send: its largest gradient or table message, plus room
  /// for a header.
  int64_t largestLegalMessage() const {
    int64_t largest = core.plan.largestGradientBytes();
    if (core.tables.size() > 0)
      largest = std::max(largest, core.tables.largestMessage());
    return largest + (64 << 10);
  }

  /// Takes connections: the server (runtime/transport/router_server.h) at the endpoint.
  llvm::Error bindSocket() {
    const PserverRun &run = core.run;
    RouterSpec spec;
    spec.socket.endpoint = core.endpoint(), spec.socket.bind = run.bind;
    spec.socket.curve = run.curve, spec.socket.allowed = run.curve.allowed;
    spec.socket.risk = "join the job, read and change the model";
    spec.socket.serving = "serving";
    spec.socket.held = run.heldPort;
    spec.socket.log = [this](const std::string &line) { core.log(line); };
    spec.name = "this pserver";
    spec.refusal = [](const std::string &why) { // a header alone is one frame
      proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, "", 0, 0);
      h.set_error(why);
      return h.SerializeAsString();
    };
    // A peer announcing a frame larger than any message of this plan is cut off before
    // ZeroMQ allocates it: junk cannot hold the pserver's memory.
    spec.maxMessageBytes = largestLegalMessage();
    // Linger so the last replies (the `complete` acknowledgements) reach the trainers.
    spec.linger = std::chrono::milliseconds(2000);
    auto server = RouterServer::open(std::move(spec));
    if (!server)
      return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(server.takeError()));
    core.server = std::move(*server);
    if (run.curve.enabled())
      core.log(llvm::formatv("CURVE: accepting {0} trainer key(s), traffic encrypted",
                             run.curve.allowed.size())
                   .str());
    if (onBound)
      onBound(core.server->boundTcp());
    return llvm::Error::success();
  }

  /// The first lines: what this pserver serves, and how.
  void logServing() {
    const PserverRun &run = core.run;
    std::string threads = run.serviceThreads > 0
                              ? std::to_string(run.serviceThreads) + " service threads"
                              : std::string("the socket's thread");
    core.log(llvm::formatv("serving {0} param blocks and {1} distributed tables for {2} trainers "
                           "in {3} mode (plan {6}), optimizing on {4}{5}",
                           core.plan.paramBlocks.size(), core.tables.size(), core.plan.fanin,
                           modeName(core.plan.mode), threads,
                           run.computeThreads.empty() ? "" : "; " + run.computeThreads,
                           core.plan.digest)
                 .str());
    if (core.opts.tableBudget.limited() && core.tables.size() > 0)
      core.log(llvm::formatv("distributed tables: {0}: at most {1} rows a table",
                             core.opts.tableBudget.describe(), core.tables.rowsPerTable())
                   .str());
  }

  /// "E rows evicted, K keys refused, C admission counters forgotten".
  static std::string describeRoom(const RoomCounts &c) {
    return llvm::formatv("{0} rows evicted, {1} keys refused, {2} admission counters forgotten",
                         c.evicted, c.refused, c.countersForgotten)
        .str();
  }

  /// Says what the table budget has done: when it first acts, then at most every 10 s while
  /// it goes on acting.
  void logTableRoom() {
    if (!core.opts.tableBudget.limited())
      return;
    RoomCounts now = core.tables.roomCounts();
    if (now == roomLogged)
      return;
    if (roomLoggedAt && Clock::now() - *roomLoggedAt < std::chrono::seconds(10))
      return;
    core.log(llvm::formatv("distributed tables are full ({0} rows a table): {1} so far",
                           core.tables.rowsPerTable(), describeRoom(now))
                 .str());
    roomLogged = now;
    roomLoggedAt = Clock::now();
  }

  /// A broken hybrid job waits a little for the other trainers to hear why, not for one that
  /// died with the failure: its trainers fail together (one is gone, the others' all-reduce
  /// with it fails). A PS job's trainers may be slow, not gone: they get the barrier timeout.
  llvm::Error checkBrokenHybrid(Clock::time_point now) {
    auto grace = core.opts.brokenJobGrace;
    if (!core.run.hybrid || core.broken.empty() || now - core.brokenAt <= grace)
      return llvm::Error::success();
    std::vector<int64_t> silent = core.trainers.ids(
        [&](const TrainerSlot &s) { return s.live() && s.lastSeen < core.brokenAt; });
    if (silent.empty())
      return llvm::Error::success();
    llvm::consumeError(core.failAll(core.broken)); // each waiting trainer hears why
    // A consequence of the failure: the launcher names the first.
    return llvm::make_error<TrainersFailedError>(
        llvm::formatv("pserver {0}: {1}; trainer(s) {2} sent nothing in the {3:f0} s since",
                      core.endpoint(), core.broken, TrainerSlots::list(silent), secondsOf(grace))
            .str());
  }

  /// Checks the timeouts and the trainers the scheduler says are gone; an error ends the loop.
  llvm::Error checkTimeouts() {
    auto now = Clock::now();
    if (llvm::Error err = core.steps->checkTimeouts(now))
      return err;
    if (llvm::Error err = checkBrokenHybrid(now))
      return err;
    if (core.run.goneTrainers)
      for (const auto &[t, why] : core.run.goneTrainers())
        if (t >= 0 && t < core.trainers.size() && core.trainers[t].live())
          if (llvm::Error err = core.steps->gone(t, why))
            return err;
    if (now - core.lastActivity > core.run.timeouts.idle) {
      std::vector<int64_t> waiting =
          core.trainers.ids([](const TrainerSlot &s) { return s.live(); });
      return core.failAll(llvm::formatv("no message from any trainer in {0:f2} s; still waiting "
                                        "for trainer(s) {1}",
                                        secondsOf(now - core.lastActivity),
                                        TrainerSlots::list(waiting))
                              .str());
    }
    return llvm::Error::success();
  }

  /// Waits up to `timeout` for a message, sending the replies whose turn comes meanwhile.
  llvm::Expected<std::optional<Incoming>> nextMessage(std::chrono::milliseconds timeout) {
    core.replies.flush(); // what a task run inline (no service threads) just made
    // Only replies owed by service threads (async params) need the eventfd watched; otherwise
    // a blocking receive is the cheaper wait (bench_runtime).
    bool watchReplies = core.threads.workers().size() > 0 && core.replies.owing();
    auto got = core.server->receive(timeout, watchReplies ? core.replies.fd() : -1);
    if (!got)
      return got.takeError();
    if (got->woken)
      core.replies.flush();
    return std::move(got->message);
  }

  /// Checks one message and acts on it; a refusal is answered to its sender and logged. False
  /// when it was refused before it reached a handler (or, rolled back, by one): nothing changed.
  bool takeMessage(Incoming &in) {
    core.lastActivity = Clock::now();
    auto msg = decodeMessage(in.frames, 0);
    if (!msg) {
      std::string why = llvm::toString(msg.takeError());
      core.server->logRefusal(in, "rejected a message from peer " + in.peerName() + ": " + why);
      core.replyError(in.peer, proto::MsgHeader(), why);
      return false;
    }
    llvm::Error err = handleMessage(core, in.peer, *msg);
    if (!err)
      return true;
    if (err.isA<RolledBackError>()) { // a trainer that has not reconnected yet
      llvm::consumeError(std::move(err));
      core.replyRolledBack(in.peer, msg->header, *core.steps->rolledBackTo());
      return false;
    }
    std::string why = llvm::toString(std::move(err));
    core.server->logRefusal(in, llvm::formatv("rejected {0} {1} from trainer {2} (peer {3}): {4}",
                                              kindName(msg->header.kind()), msg->header.var(),
                                              msg->header.trainer_id(), in.peerName(), why)
                                    .str());
    core.replyError(in.peer, msg->header, why);
    return true;
  }

  /// Takes messages while a trainer is live; a fatal error, a stop request or a timeout ends it.
  llvm::Error serve() {
    while (core.trainers.anyLive()) {
      if (core.run.shouldStop && core.run.shouldStop())
        return core.failAll(stopSignal() ? "stopped by signal " + std::to_string(stopSignal())
                                         : std::string("stopped on request"));
      if (!core.fatal.empty())
        return core.failAll(core.fatal);
      if (llvm::Error err = checkTimeouts())
        return err;
      if (std::optional<std::string> failed = core.threads.workers().failure())
        core.fatal = *failed;
      auto next = nextMessage(std::chrono::milliseconds(100));
      if (!next)
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(next.takeError()));
      if (!*next || !takeMessage(**next))
        continue;
      if (llvm::Error err = core.steps->afterMessage())
        return err;
      logTableRoom();
    }
    return llvm::Error::success();
  }

  /// How the job went: an error when a trainer was lost or failed, or the pserver itself did.
  llvm::Error jobOutcome() {
    // Updates still queued land before the params are saved.
    if (llvm::Error err = core.threads.workers().drain())
      core.fatal = llvm::toString(std::move(err));
    core.replies.flush();
    if (!core.fatal.empty())
      return core.failAll(core.fatal);
    std::vector<int64_t> lost = core.trainers.ids([](const TrainerSlot &s) { return s.lost; });
    if (!lost.empty())
      return makeError("pserver {0}: trainer(s) {1} were lost before completing", core.endpoint(),
                       TrainerSlots::list(lost));
    std::vector<int64_t> failed =
        core.trainers.ids([](const TrainerSlot &s) { return s.failure.has_value(); });
    if (!failed.empty()) // the job failed: no success, and so no save
      return llvm::make_error<TrainersFailedError>(
          llvm::formatv("pserver {0}: trainer(s) {1} failed; the first: {2}", core.endpoint(),
                        TrainerSlots::list(failed), *core.trainers[failed.front()].failure)
              .str());
    return llvm::Error::success();
  }

  /// After the last trainer: the job's outcome, the final logs, the tables' save and the last
  /// checkpoint.
  llvm::Error finish() {
    if (llvm::Error err = jobOutcome())
      return err;
    if (core.skippedUpdates > 0)
      core.log(llvm::formatv("skipped {0} update(s) holding NaN or inf (--nonfinite-grads=skip)",
                             core.skippedUpdates)
                   .str());
    if (core.tables.size() > 0) {
      std::string budget;
      if (core.opts.tableBudget.limited())
        budget = llvm::formatv(" ({0} MB budget: {1})", core.opts.tableBudget.bytes >> 20,
                               describeRoom(core.tables.roomCounts()))
                     .str();
      core.log(llvm::formatv("distributed tables hold {0} rows in {1} bytes{2}", core.tables.rows(),
                             core.tables.bytesHeld(), budget)
                   .str());
      if (!core.run.tableSaveDir.empty())
        if (llvm::Error err = core.tables.save(core.run.tableSaveDir))
          return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
    }
    if (llvm::Error err = core.steps->finish())
      return err;
    if (core.checkpoints) // on disk before this pserver says it is done
      if (llvm::Error err = core.checkpoints->finish())
        return makeError("pserver {0}: {1}", core.endpoint(), llvm::toString(std::move(err)));
    if (std::string moved = core.peerMemory.summary(); !moved.empty())
      core.log(moved);
    if (std::string line = core.steps->summary(); !line.empty())
      core.log(line);
    core.log("all trainers completed");
    return llvm::Error::success();
  }

  /// Serves until every trainer completed, then says how the job went and saves what it must.
  llvm::Error loop() {
    if (llvm::Error err = init())
      return err;
    logServing();
    if (llvm::Error err = serve())
      return err;
    return finish();
  }
};

PserverLoop::PserverLoop(const proto::Program &program, Scope &scope, PserverOptions options,
                         PserverRun run)
    : impl_(std::make_unique<Impl>(program, scope, std::move(options), std::move(run))) {}
PserverLoop::~PserverLoop() = default;

llvm::Error PserverLoop::run() {
  keepFreedMemoryForReuse(); // gradients arrive every step
  if (impl_->core.opts.tableBudget.limited())
    boundFreedMemory(); // what was promised, over speed
  impl_->onBound = onBound;
  return impl_->loop();
}

} // namespace oar::runtime
