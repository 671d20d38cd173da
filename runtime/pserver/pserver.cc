// The pserver loop.
#include "runtime/pserver/pserver.h"
#include "train/learning_rate.h"

#include <cmath>
#include <cstring>

#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <unistd.h>

#include "executor/finite_check.h"
#include "executor/threads.h"
#include "ir/distributed_mode.h"
#include "ir/names.h"
#include "ops/op_registry.h"
#include "runtime/pserver/ordered_replies.h"
#include "runtime/pserver/param_versions.h"
#include "runtime/pserver/pserver_checkpoint.h"
#include "runtime/pserver/pserver_peer_memory.h"
#include "runtime/pserver/pserver_tables.h"
#include "runtime/pserver/service_threads.h"
#include "runtime/transport/router_server.h"
#include "runtime/wire/peer_memory.h"
#include "support/error.h"
#include "support/log_limiter.h"
#include "support/memory_policy.h"
#include "support/signals.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

using Clock = std::chrono::steady_clock;
/// Elastic async: at most this many trainer ids, joined ones included.
constexpr int64_t kMaxElasticTrainers = 1024;
/// Hybrid: how long a job that broke waits for its other trainers' next message (each is told
/// why then) before it ends naming the silent ones, which died with the failure.
constexpr std::chrono::seconds kBrokenJobGrace{5};

namespace {
/// A message of a trainer that has not said HELLO since this pserver went back to a checkpoint.
class RolledBackError : public llvm::ErrorInfo<RolledBackError> {
public:
  static char ID;
  RolledBackError(int64_t trainer, int64_t step) : trainer_(trainer), step_(step) {}
  std::string message() const {
    return llvm::formatv("this pserver went back to the checkpoint of step {0} (a pserver of the "
                         "job restarted); trainer {1} must say HELLO again",
                         step_, trainer_);
  }
  void log(llvm::raw_ostream &os) const override { os << message(); }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  int64_t trainer_, step_;
};
char RolledBackError::ID = 0;

/// A get_var waiting until the trainer's last closed step has been applied.
struct PendingGet {
  std::string peer;
  proto::MsgHeader header;
  size_t table = 0; ///< a PULL_ROWS's table
};

} // namespace

struct PserverLoop::Impl {
  proto::Program program; // a copy: scale attrs follow the number of live trainers
  Scope &scope;
  PserverOptions opts;
  Executor exec;
  std::string endpoint, digest;
  Mode mode = Mode::Sync;
  int64_t fanin = 1;
  llvm::StringMap<int> gradToBlock;
  std::set<std::string> paramBlocks;
  llvm::StringMap<ops::VarType> declared;

  std::vector<int64_t> barrierRound, lastStep;
  std::vector<bool> completed, lost;
  /// The connection (routing id) each trainer said HELLO on; empty until it has. Anything else a
  /// trainer sends must come on that connection: a pserver restarted under a running job, or a
  /// peer that never said HELLO, cannot complete a trainer or feed it gradients.
  std::vector<std::string> helloPeer;
  /// Same-host trainers: whose memory we read, where they write, what they read of ours.
  PserverPeerMemory peerMemory;
  /// Async and GEO: fetches share a param's version; updates beside it write a new one.
  ParamVersions versions;
  llvm::StringMap<ops::VarType> gradTypes() const {
    llvm::StringMap<ops::VarType> types;
    for (const auto &entry : gradToBlock)
      types[entry.getKey()] = declared.lookup(entry.getKey());
    return types;
  }
  std::map<int64_t, std::string> failures; ///< trainers that completed with an error, and why
  /// Sync: why the job cannot go on (a trainer failed or was replaced); everything but COMPLETE
  /// is then refused with it, so every trainer fails instead of training on without one.
  std::string syncBroken;
  Clock::time_point syncBrokenAt;
  std::vector<Clock::time_point> lastSeen;
  int64_t optimizedRounds = 0, liveForScale = 0;
  std::vector<PendingGet> pending;
  Clock::time_point lastActivity = Clock::now();
  std::optional<Clock::time_point> roundWaitStart;
  /// Which service thread runs each optimize block (index = block), and which one updates
  /// each var an optimize block writes.
  std::vector<int> blockThread;
  llvm::StringMap<int> varThread;
  PserverTables tables;
  /// What the table budget had done when the log last said (see logTableRoom).
  RoomCounts roomLogged;
  std::optional<Clock::time_point> roomLoggedAt;
  std::optional<PserverCheckpoints> checkpoints;
  /// Async and GEO: the job step of the next checkpoint, and each trainer's step in the
  /// checkpoint this pserver resumed from.
  int64_t nextAsyncCheckpoint = 0;
  std::vector<int64_t> resumedFrom;
  /// The step this pserver last went back to at a trainer's request, until it moves on: the
  /// other trainers' requests for the same step find it done.
  std::optional<int64_t> rolledBackTo;
  std::vector<int> tableThread; ///< the service thread that owns each table
  std::unique_ptr<ServiceThreads> workers;
  std::unique_ptr<RouterServer> server;
  OrderedReplies replies{[this](const std::string &peer, const proto::MsgHeader &h,
                                const Tensor *t) { sendNow(peer, h, t); }};
  std::function<void(const std::string &)> onBound;

  Impl(const proto::Program &p, Scope &s, PserverOptions o)
      : program(p), scope(s), opts(std::move(o)) {}

  std::mutex logMutex; ///< the ZAP handler logs from its own thread
  void log(const std::string &line) {
    std::lock_guard<std::mutex> lock(logMutex);
    if (opts.log)
      opts.log("pserver " + endpoint + ": " + line);
  }

  /// Everything before the first message: the plan, the tables, the state to start from, the
  /// per-trainer bookkeeping and the socket.
  llvm::Error init() {
    if (llvm::Error err = readPlan())
      return err;
    if (!replies.valid())
      return makeError("pserver {0}: cannot make an eventfd: {1}", endpoint, strerror(errno));
    if (llvm::Error err = tables.init(program, scope, fanin, opts.tableBudget))
      return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    std::optional<int64_t> resumeStep;
    if (llvm::Error err = loadState().moveInto(resumeStep))
      return err;
    if (opts.learningRate)
      if (llvm::Error err = setLearningRate(program, scope, *opts.learningRate))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    if (mode != Mode::Sync)
      versions.init(program, paramBlocks, scope);
    assignBlocksToThreads();
    trackTrainers();
    if (llvm::Error err = startAt(resumeStep))
      return err;
    return bindSocket();
  }

  /// What the pserver keeps of each of the job's trainers, before any said HELLO.
  void trackTrainers() {
    barrierRound.assign(fanin, 0);
    lastStep.assign(fanin, 0);
    completed.assign(fanin, false);
    lost.assign(fanin, false);
    helloPeer.assign(fanin, "");
    peerMemory.setSync(mode == Mode::Sync);
    peerMemory.resize(fanin);
    lastSeen.assign(fanin, Clock::now());
  }

  /// Where training goes on: the checkpoint's step (`resumeStep`, each trainer's own in async
  /// and GEO), else 0, written as the first checkpoint when the pserver checkpoints.
  llvm::Error startAt(std::optional<int64_t> resumeStep) {
    if (resumeStep && mode != Mode::Sync) {
      // Each trainer goes on from where this checkpoint saw it (the HELLO reply says).
      if (llvm::Error err = resumeTrainerSteps(*resumeStep))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
      nextAsyncCheckpoint = nextCheckpointAfter(*resumeStep);
    } else if (resumeStep) {
      optimizedRounds = *resumeStep;
      barrierRound.assign(fanin, *resumeStep);
      lastStep.assign(fanin, *resumeStep);
    } else if (checkpoints) { // the step a restart before the first checkpoint goes back to
      if (llvm::Error err = checkpoints->write(
              0, program, scope, tables,
              mode == Mode::Sync ? std::map<std::string, std::string>{} : trainerStepFields()))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    }
    if (checkpoints && mode == Mode::Sync) // it starts where the trainers' rollback requests point
      rolledBackTo = optimizedRounds;
    return llvm::Error::success();
  }

  /// What the program's listen_and_serv says: the endpoint, mode, trainers, and which block
  /// applies each gradient.
  llvm::Error readPlan() {
    const proto::Block &root = program.blocks(0);
    const proto::Op *listen = nullptr;
    for (const proto::Op &op : root.ops())
      if (op.type() == "listen_and_serv")
        listen = &op;
    if (!listen)
      return makeError("the pserver program has no listen_and_serv op");
    ops::AttrReader attrs(*listen, *ops::lookupOp("listen_and_serv"));
    endpoint = attrs.getString("endpoint");
    auto named = parseMode(attrs.getString("mode"));
    if (!named)
      return addContext(named.takeError(), "the pserver program's listen_and_serv");
    mode = *named;
    fanin = attrs.getInt("fanin");
    digest = attrs.getString("plan_digest");
    for (const std::string &entry : attrs.getStrings("grad_to_block_id")) {
      auto [name, idx] = llvm::StringRef(entry).rsplit(':');
      int block = 0;
      if (idx.getAsInteger(10, block) || block <= 0 || block >= program.blocks_size())
        return makeError("listen_and_serv: bad grad_to_block_id entry \"{0}\"", entry);
      gradToBlock[name] = block;
    }
    for (const std::string &p : attrs.getStrings("param_blocks"))
      paramBlocks.insert(p);
    for (const proto::Var &v : root.vars()) {
      ops::VarType t;
      t.dtype = v.type().dtype();
      t.dims.assign(v.type().dims().begin(), v.type().dims().end());
      declared[v.name()] = t;
    }
    return llvm::Error::success();
  }

  /// The params and tables to start from: the newest checkpoint (its step returned), else
  /// --load's tables (the blocks were loaded before the loop started).
  llvm::Expected<std::optional<int64_t>> loadState() {
    std::optional<int64_t> resumeStep;
    if (!opts.checkpointDir.empty()) {
      if (opts.elastic)
        return makeError("pserver {0}: checkpoints (--checkpoint-dir) record where each of the "
                         "job's trainers was; trainers joining an elastic job have no place "
                         "there",
                         endpoint);
      checkpoints.emplace(opts.checkpointDir, program.dist().checkpoint_digest(),
                          std::max(2, opts.checkpointKeep));
      resumeStep = checkpoints->latest();
    }
    if (resumeStep) {
      if (llvm::Error err = checkpoints->load(*resumeStep, program, scope, tables))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
      log(llvm::formatv("resumed from checkpoint {0}", checkpoints->pathOf(*resumeStep)).str());
    } else if (opts.loadFrom) {
      LoadReport report = opts.loaded; // the blocks, loaded before the loop started
      if (llvm::Error err = tables.load(*opts.loadFrom, /*ownPartOnly=*/false, report))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
      if (llvm::Error err = checkStateComplete(report, *opts.loadFrom, opts.training))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
      log(report.summary(*opts.loadFrom, opts.training));
    }
    return resumeStep;
  }

  /// Takes connections: the server (runtime/transport/router_server.h) at the endpoint.
  llvm::Error bindSocket() {
    RouterSpec spec;
    spec.socket.endpoint = endpoint, spec.socket.bind = opts.bind, spec.socket.curve = opts.curve;
    spec.socket.allowed = opts.curve.allowed;
    spec.socket.risk = "join the job, read and change the model";
    spec.socket.serving = "serving";
    spec.socket.held = opts.heldPort;
    spec.socket.log = [this](const std::string &line) { log(line); };
    spec.name = "this pserver";
    spec.refusal = [](const std::string &why) {
      proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, "", 0, 0);
      h.set_error(why);
      return encodeMessage(h, nullptr);
    };
    // A peer announcing a frame larger than any message of this plan is cut off before
    // ZeroMQ allocates it: junk cannot hold the pserver's memory.
    spec.maxMessageBytes = largestLegalMessage();
    // Linger so the last replies (the `complete` acknowledgements) reach the trainers.
    spec.linger = std::chrono::milliseconds(2000);
    auto opened = RouterServer::open(std::move(spec));
    if (!opened)
      return makeError("pserver {0}: {1}", endpoint, llvm::toString(opened.takeError()));
    server = std::move(*opened);
    if (opts.curve.enabled())
      log(llvm::formatv("CURVE: accepting {0} trainer key(s), traffic encrypted",
                        opts.curve.allowed.size())
              .str());
    if (onBound)
      onBound(server->boundTcp());
    return llvm::Error::success();
  }

  /// Gives each optimize block a service thread for life. Blocks that write a common var (even
  /// through a chain of others) share a thread, so no var is ever written by two threads. Every
  /// var a block writes is created here: service threads only look vars up, and the scope's map
  /// never changes under them.
  void assignBlocksToThreads() {
    int threads = std::max(0, opts.serviceThreads);
    workers = std::make_unique<ServiceThreads>(threads);
    auto forEachOutput = [&](int block, auto fn) {
      for (const proto::Op &op : program.blocks(block).ops())
        for (const proto::Slot &slot : op.outputs())
          for (const std::string &var : slot.names())
            fn(var);
    };
    llvm::EquivalenceClasses<int> groups;
    llvm::StringMap<int> firstWriter;
    for (int b = 1; b < program.blocks_size(); ++b) {
      groups.insert(b);
      forEachOutput(b, [&](const std::string &var) {
        auto [it, fresh] = firstWriter.try_emplace(var, b);
        if (!fresh)
          groups.unionSets(it->getValue(), b);
      });
    }
    blockThread.assign(program.blocks_size(), 0);
    std::map<int, int> groupThread; // group leader -> thread, dealt round robin
    for (int b = 1; b < program.blocks_size(); ++b) {
      int leader = groups.getLeaderValue(b);
      auto [it, fresh] = groupThread.try_emplace(leader, 0);
      if (fresh && threads > 0)
        it->second = static_cast<int>(groupThread.size() - 1) % threads;
      blockThread[b] = it->second;
      forEachOutput(b, [&](const std::string &var) {
        varThread[var] = blockThread[b];
        scope.get(var);
      });
    }
    for (const auto &entry : gradToBlock) // async gradients are received on service threads
      scope.get(entry.getKey());
    for (size_t i = 0; i < tables.size(); ++i) // after the blocks' groups, round robin
      tableThread.push_back(threads > 0 ? static_cast<int>((groupThread.size() + i) % threads) : 0);
  }
  int threadOf(llvm::StringRef var) const {
    auto it = varThread.find(var);
    return it == varThread.end() ? 0 : it->getValue();
  }

  /// The largest frame a trainer may send: its largest gradient, plus room for a header.
  int64_t largestLegalMessage() const {
    int64_t largest = 0;
    for (const auto &entry : gradToBlock) {
      const ops::VarType &t = declared.lookup(entry.getKey());
      int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
      for (int64_t d : t.dims)
        bytes *= std::max<int64_t>(d, 1);
      largest = std::max(largest, bytes);
    }
    if (tables.size() > 0)
      largest = std::max(largest, tables.largestMessage());
    return largest + (64 << 10);
  }

  bool live(int64_t t) const { return !completed[t] && !lost[t]; }
  /// The trainers this pserver keeps state for: the job's count, and any that joined (elastic).
  int64_t trainerSlots() const { return static_cast<int64_t>(completed.size()); }
  bool anyLive() const {
    for (int64_t t = 0; t < trainerSlots(); ++t)
      if (live(t))
        return true;
    return false;
  }
  /// Elastic async: makes room for trainer `t`, which joined the running job. Slots between the
  /// old ones and `t` (ids the scheduler has not given) count as completed.
  void addTrainerSlot(int64_t t) {
    int64_t from = trainerSlots();
    for (auto *v : {&barrierRound, &lastStep})
      v->resize(t + 1, 0);
    completed.resize(t + 1, true);
    lost.resize(t + 1, false);
    helloPeer.resize(t + 1, "");
    peerMemory.resize(t + 1);
    lastSeen.resize(t + 1, Clock::now());
    completed[t] = false;
    log(llvm::formatv("trainer {0} joined the running job ({1} trainer slots)", t, t + 1).str());
    (void)from;
  }
  std::string listTrainers(const std::vector<int64_t> &ids) const {
    std::vector<std::string> s;
    for (int64_t t : ids)
      s.push_back(std::to_string(t));
    return llvm::join(s, ", ");
  }

  void sendNow(const std::string &peer, const proto::MsgHeader &h, const Tensor *t) {
    if (llvm::Error err = server->send(peer, encodeMessage(h, t)); err && fatal.empty())
      fatal = llvm::toString(std::move(err));
    else
      llvm::consumeError(std::move(err));
  }
  /// Replies in the order of the peer's requests (see OrderedReplies).
  void reply(const std::string &peer, const proto::MsgHeader &h, const Tensor *t = nullptr) {
    replies.send(peer, h, t);
  }
  void replyError(const std::string &peer, const proto::MsgHeader &req, const std::string &why) {
    proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, req.var(), req.trainer_id(), req.step());
    h.set_error(why);
    reply(peer, h);
  }
  void replyVar(const std::string &peer, const proto::MsgHeader &req) {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    if (mode == Mode::Sync) { // params do not change until every trainer has fetched: no copy
      if (const Tensor *param = scope.find(req.var())) {
        describeTensor(h, *param); // sendMessage then sends `h` as it is, without a copy
        peerMemory.serve(req, h, *param);
        reply(peer, h, param);
      }
      return;
    }
    // Updates may land while ZeroMQ sends (or the trainer reads): the thread that updates the
    // param shares its version between two of its updates, and never writes it again.
    std::shared_ptr<OrderedReplies::Slot> slot = replies.reserve(peer);
    workers->post(threadOf(req.var()), [this, slot, h, req]() mutable -> llvm::Error {
      Tensor version = *scope.find(h.var());
      describeTensor(h, version);
      peerMemory.serve(req, h, version);
      replies.fill(slot, h, std::move(version));
      return llvm::Error::success();
    });
  }

  /// Answers a PULL_ROWS with the rows of its keys. Sync: the table does not change until the
  /// step's barrier, so the socket's thread reads it; async: the table's thread does, between
  /// two of its updates.
  void replyRows(const std::string &peer, const proto::MsgHeader &req, size_t table) {
    proto::MsgHeader h = makeHeader(proto::REPLY_VAR, req.var(), req.trainer_id(), req.step());
    if (mode == Mode::Sync) {
      Tensor rows = tables.pull(table, req);
      reply(peer, h, &rows);
      return;
    }
    std::shared_ptr<OrderedReplies::Slot> slot = replies.reserve(peer);
    auto request = std::make_shared<proto::MsgHeader>(req);
    workers->post(tableThread[table], [this, slot, h, request, table]() -> llvm::Error {
      replies.fill(slot, h, tables.pull(table, *request));
      return llvm::Error::success();
    });
  }

  /// Checks a var payload against the declared var it is written to.
  llvm::Error checkPayload(const Message &m, llvm::StringRef var) {
    const ops::VarType &want = declared[var];
    std::vector<int64_t> dims = m.dims();
    if (!m.hasTensor() || m.header.dtype() != want.dtype ||
        llvm::ArrayRef<int64_t>(dims) != llvm::ArrayRef<int64_t>(want.dims))
      return makeError("{0} must be {1} but the message holds {2}{3}", var, ops::typeString(want),
                       dtypeName(m.header.dtype()), dimsString(dims));
    return llvm::Error::success();
  }

  /// A gradient holding NaN or inf is never applied: the trainer that sent it hears why (and, in
  /// sync mode, so does the job), instead of a model that silently goes bad; or, with
  /// --nonfinite-grads=skip, its param's update for that step is skipped (see skipUpdate).
  /// Returns what is wrong with `m`, or "".
  std::string nonFiniteGradient(const Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    int64_t n = 1;
    for (int64_t d : h.dims())
      n *= d;
    Tensor landing; // holds a landed gradient's buffer while it is checked
    const void *bytes = m.payload.data();
    if (h.landed()) {
      landing = peerMemory.landing(t, h.var());
      bytes = landing.raw();
    } else if (m.readInto) {
      bytes = m.readInto.get();
    }
    std::optional<int64_t> bad = firstNonFinite(bytes, h.dtype(), n);
    if (!bad)
      return "";
    double v = h.dtype() == proto::F64 ? static_cast<const double *>(bytes)[*bad]
                                       : static_cast<const float *>(bytes)[*bad];
    return llvm::formatv("gradient {0} from trainer {1} for step {2} holds {3} at element {4}",
                         h.var(), t, h.step(), std::isnan(v) ? "nan" : "inf", *bad)
        .str();
  }

  /// --nonfinite-grads=skip: the update `what` describes is not applied, the trainer is answered
  /// OK, and the log says so (within its budget); the count goes in the last line.
  int64_t skippedUpdates = 0;
  LogLimiter skipLog;
  void skipUpdate(const std::string &peer, const proto::MsgHeader &h, const std::string &what) {
    ++skippedUpdates;
    int64_t held = 0;
    if (skipLog.allow("skipped", held))
      log(what + "; its update is skipped (--nonfinite-grads=skip)" +
          (held ? llvm::formatv(" ({0} more skips not logged)", held).str() : std::string()));
    reply(peer, makeHeader(proto::REPLY_OK, h.var(), h.trainer_id(), h.step()));
  }
  /// Sync: the optimize blocks and tables whose update this step skips.
  std::set<int> skippedBlocks;
  std::set<size_t> skippedTables;

  /// Runs optimize block `idx`.
  llvm::Error runBlock(int idx) {
    return addContext(exec.run(program, scope, idx), "pserver " + endpoint);
  }
  /// Async and GEO: runs optimize block `idx` on its service thread (see ParamVersions).
  llvm::Error applyUpdate(int idx) {
    return addContext(versions.apply(exec, program, idx, scope), "pserver " + endpoint);
  }

  /// Sync: the scale of each optimize block averages over the trainers still live.
  void setAverageOver(int64_t trainers) {
    if (trainers == liveForScale)
      return;
    liveForScale = trainers;
    for (int b = 1; b < program.blocks_size(); ++b)
      for (proto::Op &op : *program.mutable_blocks(b)->mutable_ops())
        if (op.type() == "scale")
          setAttr(op, "scale", AttrValue(1.0f / static_cast<float>(trainers)));
  }

  /// Sync: applies the next step once every live trainer has closed it.
  llvm::Error tryOptimize() {
    for (;;) {
      int64_t round = optimizedRounds + 1;
      std::vector<int64_t> liveIds;
      bool ready = true, someoneWaits = false;
      for (int64_t t = 0; t < fanin; ++t) {
        if (!live(t))
          continue;
        liveIds.push_back(t);
        ready &= barrierRound[t] >= round;
        someoneWaits |= barrierRound[t] >= round;
      }
      if (liveIds.empty() || !ready) {
        if (someoneWaits && !roundWaitStart)
          roundWaitStart = Clock::now();
        return llvm::Error::success();
      }
      // Trainers that left contribute nothing: zero their copies and average over the rest.
      for (int64_t t = 0; t < fanin; ++t)
        if (!live(t)) {
          peerMemory.retire(t, scope); // it may still write where it was told to
          for (const auto &entry : gradToBlock)
            if (Tensor *copy =
                    scope.find(trainerCopyName(entry.getKey(), static_cast<unsigned>(t))))
              std::fill_n(static_cast<std::byte *>(copy->raw()), copy->bytes(), std::byte{0});
        }
      setAverageOver(static_cast<int64_t>(liveIds.size()));
      for (const auto &entry : gradToBlock)
        if (!skippedBlocks.count(entry.getValue()))
          workers->post(blockThread[entry.getValue()],
                        [this, block = entry.getValue()] { return runBlock(block); });
      std::vector<bool> liveNow(fanin);
      for (int64_t t = 0; t < fanin; ++t)
        liveNow[t] = live(t);
      for (size_t i = 0; i < tables.size(); ++i)
        workers->post(tableThread[i], [this, i, liveNow, skip = skippedTables.count(i) > 0] {
          if (skip)
            tables.skipStep(i);
          else
            tables.applyStep(i, liveNow);
          return llvm::Error::success();
        });
      skippedBlocks.clear();
      skippedTables.clear();
      if (llvm::Error err = workers->drain())
        return err;
      optimizedRounds = round;
      roundWaitStart.reset();
      if (rolledBackTo && round > *rolledBackTo)
        rolledBackTo.reset();
      if (checkpoints) {
        bool requested = takeCheckpointRequest(); // SIGUSR1
        if (requested || (opts.checkpointEvery > 0 && round % opts.checkpointEvery == 0)) {
          if (llvm::Error err = checkpoints->write(round, program, scope, tables, {},
                                                   writtenLog(requested, round)))
            return err;
        }
      }
      serveReadyGets();
    }
  }

  /// Async and GEO: where trainer `t` is, as far as this pserver knows (after a restart, at least
  /// where its checkpoint saw it: a HELLO restarts the trainer's clock at 0).
  int64_t trainerStep(int64_t t) const {
    return std::max(lastStep[t], t < static_cast<int64_t>(resumedFrom.size()) ? resumedFrom[t] : 0);
  }
  /// Async and GEO: the job's step is the trainers' mean step.
  int64_t asyncJobStep() const {
    int64_t sum = 0;
    for (int64_t t = 0; t < fanin; ++t)
      sum += trainerStep(t);
    return sum / std::max<int64_t>(fanin, 1);
  }
  int64_t nextCheckpointAfter(int64_t step) const {
    return opts.checkpointEvery > 0 ? (step / opts.checkpointEvery + 1) * opts.checkpointEvery
                                    : std::numeric_limits<int64_t>::max();
  }
  /// Async and GEO: each trainer's step, as a checkpoint's MANIFEST records it.
  std::map<std::string, std::string> trainerStepFields() const {
    std::vector<std::string> steps;
    for (int64_t t = 0; t < fanin; ++t)
      steps.push_back(std::to_string(trainerStep(t)));
    return {{"trainer_steps", llvm::join(steps, ",")}};
  }
  llvm::Error resumeTrainerSteps(int64_t step) {
    std::map<std::string, std::string> fields = checkpoints->fields(step);
    llvm::SmallVector<llvm::StringRef, 8> steps;
    llvm::StringRef(fields["trainer_steps"]).split(steps, ',');
    if (static_cast<int64_t>(steps.size()) != fanin)
      return makeError("{0}: records {1} trainers' steps, this job has {2}",
                       checkpoints->pathOf(step), steps.size(), fanin);
    resumedFrom.assign(fanin, 0);
    for (int64_t t = 0; t < fanin; ++t)
      if (steps[t].getAsInteger(10, resumedFrom[t]) || resumedFrom[t] < 0)
        return makeError("{0}: trainer {1}'s step \"{2}\" is not a step", checkpoints->pathOf(step),
                         t, steps[t]);
    return llvm::Error::success();
  }
  /// Async and GEO: a checkpoint every checkpointEvery steps of the job (or on SIGUSR1), once
  /// every update queued before it has landed.
  /// "E rows evicted, K keys refused, C admission counters forgotten".
  static std::string describeRoom(const RoomCounts &c) {
    return llvm::formatv("{0} rows evicted, {1} keys refused, {2} admission counters forgotten",
                         c.evicted, c.refused, c.countersForgotten)
        .str();
  }

  /// Says what the table budget has done: when it first acts, then at most every 10 s while
  /// it goes on acting.
  void logTableRoom() {
    if (!opts.tableBudget.limited())
      return;
    RoomCounts now = tables.roomCounts();
    if (now == roomLogged)
      return;
    if (roomLoggedAt && Clock::now() - *roomLoggedAt < std::chrono::seconds(10))
      return;
    log(llvm::formatv("distributed tables are full ({0} rows a table): {1} so far",
                      tables.rowsPerTable(), describeRoom(now))
            .str());
    roomLogged = now;
    roomLoggedAt = Clock::now();
  }

  llvm::Error maybeCheckpointAsync() {
    if (!checkpoints || mode == Mode::Sync)
      return llvm::Error::success();
    int64_t step = asyncJobStep();
    bool requested = takeCheckpointRequest();
    if (!requested && step < nextAsyncCheckpoint)
      return llvm::Error::success();
    if (llvm::Error err = workers->drain())
      return err;
    if (llvm::Error err = checkpoints->write(step, program, scope, tables, trainerStepFields(),
                                             writtenLog(requested, step)))
      return err;
    nextAsyncCheckpoint = nextCheckpointAfter(step);
    return llvm::Error::success();
  }

  /// What a checkpoint written on request logs once it is on disk (from the writer's thread).
  std::function<void()> writtenLog(bool requested, int64_t step) {
    if (!requested)
      return {};
    return [this, path = checkpoints->pathOf(step)] {
      log(llvm::formatv("wrote checkpoint {0} on request (SIGUSR1)", path).str());
    };
  }

  void serveReadyGets() {
    std::vector<PendingGet> still;
    for (PendingGet &g : pending) {
      if (optimizedRounds < barrierRound[g.header.trainer_id()])
        still.push_back(std::move(g));
      else if (g.header.kind() == proto::PULL_ROWS)
        replyRows(g.peer, g.header, g.table);
      else
        replyVar(g.peer, g.header);
    }
    pending = std::move(still);
  }

  /// Handles one decoded, checked message. Errors here are the sender's fault: they are
  /// answered and logged, never applied.
  llvm::Error handle(const std::string &peer, Message &m) {
    const proto::MsgHeader &h = m.header;
    int64_t t = h.trainer_id();
    if (t >= trainerSlots() && t < kMaxElasticTrainers && opts.elastic && mode == Mode::Async &&
        h.kind() == proto::HELLO && checkJob(h, t).empty())
      addTrainerSlot(t); // a trainer joining the running job
    if (t < 0 || t >= trainerSlots())
      return makeError("trainer id {0} is out of range (this job has {1} trainers)", t, fanin);
    if (h.kind() != proto::HELLO && helloPeer[t] != peer && rolledBackTo)
      return llvm::make_error<RolledBackError>(t, *rolledBackTo);
    if (h.kind() != proto::HELLO && helloPeer[t] != peer)
      return makeError("trainer {0} sent {1} on a connection that said no HELLO (was this pserver "
                       "restarted under a running job?); a trainer starts with HELLO",
                       t, kindName(h.kind()));
    // A HELLO starts the trainer's clock again (it reconnects after a pserver restarted).
    if (h.step() < 0 || (h.kind() != proto::HELLO && h.step() < lastStep[t]))
      return makeError("step {0} goes back for trainer {1}", h.step(), t);
    if (completed[t] && h.kind() != proto::COMPLETE)
      return makeError("trainer {0} already completed", t);
    if (lost[t]) // its updates would land on a model the others moved on from
      return makeError("trainer {0} was declared lost (silent for longer than the barrier timeout "
                       "while others trained); its messages are refused",
                       t);
    // Only an accepted message moves a trainer's clock: a refused one (a forged HELLO with a
    // huge step, say) must not lock the real trainer out.
    if ((m.inPeerMemory() || h.landed()) && h.kind() != proto::SEND_VAR)
      return makeError("a {0} message cannot leave its payload in the sender's memory",
                       kindName(h.kind()));
    // A HELLO still passes, so that its connection may then say COMPLETE (with its error).
    if (!syncBroken.empty() && h.kind() != proto::COMPLETE && h.kind() != proto::HELLO)
      return makeError("{0}", syncBroken);
    int64_t step = h.step(); // dispatch may move the message's contents away
    if (llvm::Error err = dispatch(peer, m, t))
      return err;
    lastSeen[t] = Clock::now();
    lastStep[t] = step;
    return llvm::Error::success();
  }

  /// Acts on one message of trainer `t` (connection `peer`) that passed handle()'s checks, by
  /// its kind.
  llvm::Error dispatch(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    switch (h.kind()) {
    case proto::HELLO:
      return onHello(peer, m, t);
    case proto::SEND_VAR:
      return onSendVar(peer, m, t);
    case proto::GET_VAR:
      return onGetVar(peer, m, t);
    case proto::PULL_ROWS:
      return onPullRows(peer, m, t);
    case proto::PUSH_ROWS:
      return onPushRows(peer, m, t);
    case proto::SEND_BARRIER:
      return onSendBarrier(peer, m, t);
    case proto::FETCH_BARRIER:
      reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
      return llvm::Error::success();
    case proto::COMPLETE:
      return onComplete(peer, m, t);
    default:
      return makeError("a {0} message is not a request", kindName(h.kind()));
    }
  }

  /// A trainer's HELLO: checks its job, may take the pserver back to a checkpoint, and answers
  /// with what the trainer needs (its step, each other's memory).
  llvm::Error onHello(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    if (std::string why = checkJob(h, t); !why.empty())
      return makeError("{0}", why);
    // Without checkpoints nothing takes a sync trainer back once it trained: a HELLO for its
    // slot from another connection is a restart or a second process, and both break the job.
    if (mode == Mode::Sync && !checkpoints && live(t) && !helloPeer[t].empty() &&
        helloPeer[t] != peer && barrierRound[t] > 0) {
      lost[t] = true; // the process that trained in the slot is not waited for any more
      peerMemory.retire(t, scope);
      breakSyncJob(llvm::formatv("trainer {0} said HELLO again from another connection "
                                 "after training: restarted, or a second process took its "
                                 "slot",
                                 t)
                       .str());
      return makeError("{0}", syncBroken);
    }
    if (h.has_rollback_to())
      if (llvm::Error err = rollback(h.rollback_to(), t))
        return err;
    helloPeer[t] = peer;
    proto::MsgHeader ok = helloReply(t, h.step());
    peerMemory.greet(t, m, scope, gradTypes(), ok);
    if (pid_t pid = peerMemory.trainerPid(t))
      log(llvm::formatv("trainer {0} runs on this host (process {1}): gradients of {2} KiB or "
                        "more and params of {3} KiB or more move through each other's memory",
                        t, pid, kPeerMemoryMinBytes >> 10, kPeerParamMinBytes >> 10)
              .str());
    reply(peer, ok);
    return llvm::Error::success();
  }

  /// A gradient: checked, acknowledged, and kept for the step's barrier (sync) or applied by
  /// its block's thread (async, GEO).
  llvm::Error onSendVar(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    auto it = gradToBlock.find(h.var());
    if (it == gradToBlock.end())
      return makeError("var {0} is not a gradient this pserver takes", h.var());
    if (llvm::Error err = checkPayload(m, h.var()))
      return err;
    // Read before the acknowledgement, after which the trainer may move on.
    if (llvm::Error err = peerMemory.receive(t, m))
      return err;
    if (mode == Mode::Sync && h.step() != barrierRound[t])
      return makeError("gradient {0} for step {1}, which is not trainer {2}'s step", h.var(),
                       h.step(), t);
    if (std::string bad = nonFiniteGradient(m, t); !bad.empty()) {
      if (!opts.skipNonFinite)
        return makeError("{0}; it is not applied (the trainer diverged: lower the learning "
                         "rate)",
                         bad);
      if (mode == Mode::Sync)
        skippedBlocks.insert(it->getValue());
      skipUpdate(peer, h, bad);
      return llvm::Error::success();
    }
    if (mode != Mode::Sync && h.landed())
      return applyLanded(peer, t, h, it->getValue());
    reply(peer, makeHeader(proto::REPLY_OK, h.var(), t, h.step()));
    if (mode == Mode::Sync) { // kept per trainer until the step's barrier
      Tensor &copy = scope.get(trainerCopyName(h.var(), static_cast<unsigned>(t)));
      if (h.landed()) // the trainer wrote it there itself
        return llvm::Error::success();
      if (peerMemory.hasLanding(t, h.var())) // its buffer keeps the address it was given
        std::memcpy(copy.raw(), m.payload.data(), copy.bytes());
      else
        m.moveInto(copy);
      return llvm::Error::success();
    }
    // Applied by the block's thread, before any later get of what the block updates.
    auto msg = std::make_shared<Message>(std::move(m));
    workers->post(blockThread[it->getValue()], [this, msg, block = it->getValue()] {
      msg->moveInto(*scope.find(msg->header.var()));
      return applyUpdate(block);
    });
    return llvm::Error::success();
  }

  /// A param fetch: answered now, or once the trainer's step is applied (sync).
  llvm::Error onGetVar(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    PserverPeerMemory::acceptsFrom(m);
    if (!paramBlocks.count(h.var()))
      return makeError("var {0} is not a parameter this pserver serves", h.var());
    if (mode == Mode::Sync && optimizedRounds < barrierRound[t])
      pending.push_back({peer, h});
    else
      replyVar(peer, h);
    return llvm::Error::success();
  }

  /// A distributed table's rows: answered now, or once the trainer's step is applied (sync).
  llvm::Error onPullRows(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    auto table = tables.check(m);
    if (!table)
      return table.takeError();
    if (mode == Mode::Sync && optimizedRounds < barrierRound[t])
      pending.push_back({peer, h, *table});
    else
      replyRows(peer, h, *table);
    return llvm::Error::success();
  }

  /// A distributed table's gradient rows: kept for the step's barrier (sync) or applied by the
  /// table's thread.
  llvm::Error onPushRows(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    auto table = tables.check(m);
    if (!table)
      return table.takeError();
    if (mode == Mode::Sync && h.step() != barrierRound[t])
      return makeError("rows of {0} for step {1}, which is not trainer {2}'s step", h.var(),
                       h.step(), t);
    if (std::string bad = tables.nonFiniteRows(m); !bad.empty()) {
      if (!opts.skipNonFinite)
        return makeError("{0}; they are not applied (the trainer diverged: lower the learning "
                         "rate)",
                         bad);
      if (mode == Mode::Sync)
        skippedTables.insert(*table);
      skipUpdate(peer, h, bad);
      return llvm::Error::success();
    }
    reply(peer, makeHeader(proto::REPLY_OK, h.var(), t, h.step()));
    auto push = std::make_shared<Message>(std::move(m));
    if (mode == Mode::Sync) { // summed with the other trainers' at the step's barrier
      tables.keep(*table, t, std::move(push));
      return llvm::Error::success();
    }
    workers->post(tableThread[*table], [this, push, table = *table] {
      tables.apply(table, *push);
      return llvm::Error::success();
    });
    return llvm::Error::success();
  }

  /// The end of a trainer's step: sync optimizes once every trainer has closed it.
  llvm::Error onSendBarrier(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    if (mode == Mode::Sync) {
      if (h.step() != barrierRound[t])
        return makeError("send_barrier for step {0}, which is not trainer {1}'s step", h.step(), t);
      ++barrierRound[t];
    }
    reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
    return mode == Mode::Sync ? tryOptimizeOrFail() : llvm::Error::success();
  }

  /// A trainer is done (with the error it failed on, if any).
  llvm::Error onComplete(const std::string &peer, Message &m, int64_t t) {
    const proto::MsgHeader &h = m.header;
    completed[t] = true;
    peerMemory.retire(t, scope);
    if (!h.error().empty())
      failures[t] = h.error();
    log("trainer " + std::to_string(t) +
        (h.error().empty() ? " completed" : " left after an error: " + h.error()));
    reply(peer, makeHeader(proto::REPLY_OK, "", t, h.step()));
    if ((mode == Mode::Sync || opts.hybrid) && !h.error().empty() && syncBroken.empty())
      breakSyncJob(llvm::formatv("trainer {0} left after an error ({1})", t, h.error()).str());
    return mode == Mode::Sync && syncBroken.empty() ? tryOptimizeOrFail() : llvm::Error::success();
  }

  /// Async and GEO: applies the gradient trainer `t` wrote into its landing, there. The
  /// acknowledgement, after which the trainer may write the landing again, waits until the
  /// block has read it (the block's later gets waited for it anyway).
  llvm::Error applyLanded(const std::string &peer, int64_t t, const proto::MsgHeader &h,
                          int block) {
    std::shared_ptr<OrderedReplies::Slot> slot = replies.reserve(peer);
    workers->post(
        blockThread[block],
        [this, slot, block, h, landing = peerMemory.landing(t, h.var())]() -> llvm::Error {
          *scope.find(h.var()) = landing;
          llvm::Error err = applyUpdate(block);
          proto::MsgHeader ack = makeHeader(proto::REPLY_OK, h.var(), h.trainer_id(), h.step());
          if (!err) {
            replies.fill(slot, ack, Tensor());
            return llvm::Error::success();
          }
          std::string why = llvm::toString(std::move(err));
          ack.set_kind(proto::REPLY_ERROR);
          ack.set_error(why);
          replies.fill(slot, ack, Tensor());
          return makeError("{0}", why);
        });
    return llvm::Error::success();
  }

  /// Why trainer `t`'s HELLO is not of this job, or "".
  std::string checkJob(const proto::MsgHeader &h, int64_t t) const {
    if (h.mode() != modeName(mode) || h.trainers() != fanin || h.plan_digest() != digest)
      // Only the sender's own values: the pserver's plan digest and launch id are what a HELLO
      // is checked against, so a refusal must not hand them to whoever asks (its log has them).
      return llvm::formatv("job mismatch: trainer {0} runs mode {1} with {2} trainers and plan "
                           "{3}, which is not this pserver's job (its log names mode, trainers "
                           "and plan); transpile both from the same program and flags",
                           t, h.mode(), h.trainers(), h.plan_digest())
          .str();
    if (!opts.jobId.empty() && h.job_id() != opts.jobId)
      return llvm::formatv("trainer {0} belongs to launch \"{1}\", but this pserver to another "
                           "launch; a trainer of another oar-launch of the same model is refused",
                           t, h.job_id())
          .str();
    return "";
  }

  /// The answer to a HELLO: whether this pserver checkpoints, and (sync) the step it applied.
  proto::MsgHeader helloReply(int64_t t, int64_t step) const {
    // With checkpoints: sync, the step applied; async and GEO, the trainer's own last step here
    // (after a restart, where the checkpoint saw it).
    int64_t at = !checkpoints ? step : mode == Mode::Sync ? optimizedRounds : trainerStep(t);
    proto::MsgHeader ok = makeHeader(proto::REPLY_OK, "", t, at);
    ok.set_checkpoints(checkpoints.has_value());
    return ok;
  }

  /// Goes back to the checkpoint of `step` (a pserver of the job restarted from it), at trainer
  /// `by`'s request. Every trainer then sends from step + 1 again: what they sent for later
  /// steps is dropped, and each must say HELLO again before anything else is taken from it.
  llvm::Error rollback(int64_t step, int64_t by) {
    if (!checkpoints)
      return makeError("trainer {0} asks to go back to step {1}, but this pserver writes no "
                       "checkpoints (--checkpoint-dir)",
                       by, step);
    if (rolledBackTo == step)
      return llvm::Error::success(); // another trainer asked first
    if (step > optimizedRounds)
      return makeError("trainer {0} asks to go back to step {1}, which this pserver has not "
                       "applied",
                       by, step);
    if (step < optimizedRounds) {
      PserverTables fresh; // rows added since then must go too
      if (llvm::Error err = fresh.init(program, scope, fanin, opts.tableBudget))
        return err;
      if (llvm::Error err = checkpoints->load(step, program, scope, fresh))
        return err;
      tables = std::move(fresh);
    }
    // Checkpoints past `step` belong to the steps now undone: a later restart must not go on
    // from one of them.
    if (llvm::Error err = checkpoints->dropAfter(step))
      return err;
    tables.forgetKept();
    skippedBlocks.clear(); // the redone steps bring their gradients again
    skippedTables.clear();
    optimizedRounds = step;
    barrierRound.assign(fanin, step);
    lastStep.assign(fanin, step);
    roundWaitStart.reset();
    for (PendingGet &g : pending)
      replyRolledBack(g.peer, g.header, step);
    pending.clear();
    for (int64_t t = 0; t < fanin; ++t)
      if (t != by)
        helloPeer[t].clear();
    rolledBackTo = step;
    log(llvm::formatv("went back to checkpoint step {0} at trainer {1}'s request (a pserver of "
                      "the job restarted from it)",
                      step, by)
            .str());
    return llvm::Error::success();
  }
  void replyRolledBack(const std::string &peer, const proto::MsgHeader &req, int64_t step) {
    proto::MsgHeader h = makeHeader(proto::REPLY_ERROR, req.var(), req.trainer_id(), req.step());
    h.set_error(RolledBackError(req.trainer_id(), step).message());
    h.set_rolled_back_to(step);
    reply(peer, h);
  }

  // An optimize failure is the server's own problem, not the sender's: remember it.
  llvm::Error tryOptimizeOrFail() {
    if (llvm::Error err = tryOptimize())
      fatal = llvm::toString(std::move(err));
    return llvm::Error::success();
  }
  std::string fatal;

  /// Sync: a trainer is gone for good, so no further step can be the job's. Every waiting
  /// trainer is told now, the others at their next message; the pserver ends once all have
  /// completed (with an error), and exits as a failed job.
  void breakSyncJob(const std::string &what) {
    syncBroken = what + (opts.hybrid ? "; a hybrid job does not go on without one of its trainers"
                                     : "; a sync job does not go on without one of its trainers");
    syncBrokenAt = Clock::now();
    for (PendingGet &g : pending)
      replyError(g.peer, g.header, syncBroken);
    pending.clear();
    log(syncBroken);
  }

  /// Fails every waiting trainer with `why` and returns it as the server's error.
  llvm::Error failAll(const std::string &why) {
    for (PendingGet &g : pending)
      replyError(g.peer, g.header, why);
    pending.clear();
    log(why);
    return makeError("pserver {0}: {1}", endpoint, why);
  }

  /// Checks the timeouts; an error ends the loop.
  llvm::Error checkTimeouts() {
    auto now = Clock::now();
    // The time actually waited, which a slow loop turn can make exceed the timeout.
    auto secs = [](Clock::duration d) { return std::chrono::duration<double>(d).count(); };
    if (mode == Mode::Sync && roundWaitStart && now - *roundWaitStart > opts.timeouts.barrier) {
      std::vector<int64_t> missing;
      for (int64_t t = 0; t < fanin; ++t)
        if (live(t) && barrierRound[t] <= optimizedRounds)
          missing.push_back(t);
      return failAll(llvm::formatv("sync barrier of step {0} timed out after {1:f2} s: no "
                                   "send_barrier from trainer(s) {2}",
                                   optimizedRounds, secs(now - *roundWaitStart),
                                   listTrainers(missing))
                         .str());
    }
    // A broken hybrid job waits a little for the other trainers to hear why, not for one that
    // died with the failure: its trainers fail together (one is gone, the others' all-reduce
    // with it fails). A PS job's trainers may be slow, not gone: they get the barrier timeout.
    if (opts.hybrid && !syncBroken.empty() && now - syncBrokenAt > kBrokenJobGrace) {
      std::vector<int64_t> silent;
      for (int64_t t = 0; t < trainerSlots(); ++t)
        if (live(t) && lastSeen[t] < syncBrokenAt)
          silent.push_back(t);
      if (!silent.empty()) { // a consequence of the failure: the launcher names the first
        llvm::consumeError(failAll(syncBroken)); // each waiting trainer hears why
        return llvm::make_error<TrainersFailedError>(
            llvm::formatv("pserver {0}: {1}; trainer(s) {2} sent nothing in the {3:f0} s since",
                          endpoint, syncBroken, listTrainers(silent), secs(kBrokenJobGrace))
                .str());
      }
    }
    if (mode != Mode::Sync) { // a trainer silent far longer than its peers is lost
      for (int64_t t = 0; t < trainerSlots(); ++t)
        if (live(t) && now - lastSeen[t] > opts.timeouts.barrier &&
            now - lastActivity < opts.timeouts.barrier) {
          lost[t] = true;
          peerMemory.retire(t, scope);
          log(llvm::formatv("trainer {0} sent nothing for {1:f2} s while others trained; "
                            "treating it as lost",
                            t, secs(now - lastSeen[t]))
                  .str());
        }
    }
    if (opts.goneTrainers)
      for (const auto &[t, why] : opts.goneTrainers()) {
        if (t < 0 || t >= trainerSlots() || !live(t))
          continue;
        if (mode == Mode::Sync)
          return failAll(
              llvm::formatv("trainer {0} is gone, the scheduler says: {1}", t, why).str());
        lost[t] = true;
        peerMemory.retire(t, scope);
        log(llvm::formatv("trainer {0} is gone, the scheduler says: {1}; treating it as lost", t,
                          why)
                .str());
      }
    if (now - lastActivity > opts.timeouts.idle) {
      std::vector<int64_t> waiting;
      for (int64_t t = 0; t < trainerSlots(); ++t)
        if (live(t))
          waiting.push_back(t);
      return failAll(llvm::formatv("no message from any trainer in {0:f2} s; still waiting for "
                                   "trainer(s) {1}",
                                   secs(now - lastActivity), listTrainers(waiting))
                         .str());
    }
    return llvm::Error::success();
  }

  /// Waits up to `timeout` for a message, sending the replies whose turn comes meanwhile.
  llvm::Expected<std::optional<Incoming>> nextMessage(std::chrono::milliseconds timeout) {
    replies.flush(); // what a task run inline (no service threads) just made
    // Only replies owed by service threads (async params) need the eventfd watched; otherwise
    // a blocking receive is the cheaper wait.
    bool watchReplies = workers->size() > 0 && replies.owing();
    auto got = server->receive(timeout, watchReplies ? replies.fd() : -1);
    if (!got)
      return got.takeError();
    if (got->woken)
      replies.flush();
    return std::move(got->message);
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

  /// The first lines: what this pserver serves, and how.
  void logServing() {
    std::string threads = opts.serviceThreads > 0
                              ? std::to_string(opts.serviceThreads) + " service threads"
                              : std::string("the socket's thread");
    log(llvm::formatv("serving {0} param blocks and {1} distributed tables for {2} trainers in {3} "
                      "mode (plan {6}), optimizing on {4}{5}",
                      paramBlocks.size(), tables.size(), fanin, modeName(mode), threads,
                      opts.computeThreads.empty() ? "" : "; " + opts.computeThreads, digest)
            .str());
    if (opts.tableBudget.limited() && tables.size() > 0)
      log(llvm::formatv("distributed tables: {0}: at most {1} rows a table",
                        opts.tableBudget.describe(), tables.rowsPerTable())
              .str());
  }

  /// Takes messages while a trainer is live; a fatal error, a stop signal or a timeout ends it.
  llvm::Error serve() {
    while (anyLive()) {
      if (stopRequested())
        return failAll("stopped by signal " + std::to_string(stopSignal()));
      if (!fatal.empty())
        return failAll(fatal);
      if (llvm::Error err = checkTimeouts())
        return err;
      if (std::optional<std::string> failed = workers->failure())
        fatal = *failed;
      auto next = nextMessage(std::chrono::milliseconds(100));
      if (!next)
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(next.takeError()));
      if (!*next)
        continue;
      if (!takeMessage(**next))
        continue;
      if (llvm::Error err = maybeCheckpointAsync())
        return err;
      logTableRoom();
    }
    return llvm::Error::success();
  }

  /// Checks one message (its frames) and acts on it; a refusal is answered to its sender and
  /// logged. False when it was refused before it reached a handler (or, rolled back, by one):
  /// nothing changed.
  bool takeMessage(Incoming &in) {
    lastActivity = Clock::now();
    auto msg = decodeMessage(in.frames, 0);
    if (!msg) {
      std::string why = llvm::toString(msg.takeError());
      server->logRefusal(in, "rejected a message from peer " + in.peerName() + ": " + why);
      replyError(in.peer, proto::MsgHeader(), why);
      return false;
    }
    if (llvm::Error err = handle(in.peer, *msg)) {
      if (err.isA<RolledBackError>()) { // a trainer that has not reconnected yet
        llvm::consumeError(std::move(err));
        replyRolledBack(in.peer, msg->header, *rolledBackTo);
        return false;
      }
      std::string why = llvm::toString(std::move(err));
      server->logRefusal(in, llvm::formatv("rejected {0} {1} from trainer {2} (peer {3}): {4}",
                                           kindName(msg->header.kind()), msg->header.var(),
                                           msg->header.trainer_id(), in.peerName(), why)
                                 .str());
      replyError(in.peer, msg->header, why);
    }
    return true;
  }

  /// After the last trainer: updates still queued, the job's failures, the final logs, the
  /// tables' save and the last checkpoint.
  llvm::Error finish() {
    // Updates still queued land before the params are saved.
    if (llvm::Error err = workers->drain())
      fatal = llvm::toString(std::move(err));
    replies.flush();
    if (!fatal.empty())
      return failAll(fatal);
    std::vector<int64_t> lostIds;
    for (int64_t t = 0; t < trainerSlots(); ++t)
      if (lost[t])
        lostIds.push_back(t);
    if (!lostIds.empty())
      return makeError("pserver {0}: trainer(s) {1} were lost before completing", endpoint,
                       listTrainers(lostIds));
    if (!failures.empty()) { // the job failed: no success, and so no save
      std::vector<int64_t> ids;
      for (const auto &[t, why] : failures)
        ids.push_back(t);
      return llvm::make_error<TrainersFailedError>(
          llvm::formatv("pserver {0}: trainer(s) {1} failed; the first: {2}", endpoint,
                        listTrainers(ids), failures.begin()->second)
              .str());
    }
    if (skippedUpdates > 0)
      log(llvm::formatv("skipped {0} update(s) holding NaN or inf (--nonfinite-grads=skip)",
                        skippedUpdates)
              .str());
    if (tables.size() > 0) {
      std::string budget;
      if (opts.tableBudget.limited())
        budget = llvm::formatv(" ({0} MB budget: {1})", opts.tableBudget.bytes >> 20,
                               describeRoom(tables.roomCounts()))
                     .str();
      log(llvm::formatv("distributed tables hold {0} rows in {1} bytes{2}", tables.rows(),
                        tables.bytesHeld(), budget)
              .str());
      if (!opts.tableSaveDir.empty())
        if (llvm::Error err = tables.save(opts.tableSaveDir))
          return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    }
    // The job's last step, so that starting it again finds it done instead of training its tail.
    if (checkpoints && mode == Mode::Sync && checkpoints->latest() != optimizedRounds)
      if (llvm::Error err = checkpoints->write(optimizedRounds, program, scope, tables))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    if (checkpoints && mode != Mode::Sync) // each trainer's last step: a restart trains no more
      if (llvm::Error err =
              checkpoints->write(asyncJobStep(), program, scope, tables, trainerStepFields()))
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    if (checkpoints) // on disk before this pserver says it is done
      if (llvm::Error err = checkpoints->finish())
        return makeError("pserver {0}: {1}", endpoint, llvm::toString(std::move(err)));
    if (std::string moved = peerMemory.summary(); !moved.empty())
      log(moved);
    if (versions.freshVersions() + versions.copiedVersions() > 0)
      log(llvm::formatv("param versions: {0} updates wrote a new version beside one being read, "
                        "{1} copied it first",
                        versions.freshVersions(), versions.copiedVersions())
              .str());
    log("all trainers completed");
    return llvm::Error::success();
  }
};

PserverLoop::PserverLoop(const proto::Program &program, Scope &scope, PserverOptions options)
    : impl_(std::make_unique<Impl>(program, scope, std::move(options))) {}
PserverLoop::~PserverLoop() = default;

llvm::Error PserverLoop::run() {
  keepFreedMemoryForReuse(); // gradients arrive every step
  if (impl_->opts.tableBudget.limited())
    boundFreedMemory(); // what was promised, over speed
  impl_->onBound = onBound;
  return impl_->loop();
}

} // namespace oar::runtime
