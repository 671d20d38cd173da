// A node's start: its place, its scheduler, its threads, then its role.
#include "runtime/node/start_node.h"

#include <atomic>
#include <thread>

#include "executor/threads.h"
#include "feed/feed_overrides.h"
#include "runtime/cluster/launcher.h"
#include "runtime/cluster/node_threads.h"
#include "runtime/cluster/scheduler.h"
#include "runtime/cluster/scheduler_client.h"
#include "runtime/node/node_place.h"
#include "runtime/node/one_machine.h"
#include "runtime/node/step_output.h"
#include "runtime/node/trainer_settings.h"
#include "runtime/pserver/pserver.h"
#include "runtime/transport/held_port.h"
#include "support/env_names.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

class NodeStart {
public:
  NodeStart(const NodeOptions &options, const NodeIo &io) : io_(io) { node_.options = options; }

  int run() {
    if (llvm::Error err = prepare())
      return fail(std::move(err));
    if (node_.cluster.role == Role::Scheduler)
      return runSchedulerRole();
    std::thread schedulerThread; // MPI rank 0 serves the scheduler beside its own role
    if (node_.cluster.runsScheduler)
      schedulerThread = std::thread([this, s = schedulerOptions(/*holdsPort=*/false)]() mutable {
        // This process's node failing ends its scheduler too, as the process's end did.
        s.shouldStop = [this, stop = s.shouldStop] { return nodeFailed_ || (stop && stop()); };
        if (llvm::Error err = runScheduler(s)) {
          if (!nodeFailed_) // else the node's error says why
            report(llvm::toString(std::move(err)));
          else
            llvm::consumeError(std::move(err));
          schedulerStatus_ = 1;
        }
      });
    int status = 0;
    if (llvm::Error err = joinAndBudget())
      status = fail(std::move(err));
    else
      status = runRole();
    nodeFailed_ = status != 0;
    if (link_)
      link_->leave(status == 0 ? "" : "it failed (see its log)"); // no-op after fail()
    if (schedulerThread.joinable())
      schedulerThread.join();
    return status == 0 ? schedulerStatus_.load() : status;
  }

private:
  void report(const std::string &error) {
    if (io_.error)
      io_.error(error);
  }

  /// Reports `err` as the node's end, to the caller and to the scheduler; `status` is returned.
  int fail(llvm::Error err, int status = 1) {
    std::string why = llvm::toString(std::move(err));
    report(why);
    if (link_)
      link_->leave(why);
    return status;
  }

  int runSchedulerRole() {
    const ClusterSpec &c = node_.cluster;
    if (c.scheduler.empty() && c.currentEndpoint.empty())
      return fail(makeError("a scheduler needs the address to serve: --scheduler HOST:PORT"));
    if (llvm::Error err = runScheduler(schedulerOptions(/*holdsPort=*/true)))
      return fail(std::move(err));
    return 0;
  }

  void log(const std::string &line) {
    if (io_.log)
      io_.log(line);
  }

  /// The node's place, its held port, its keys, and the threads it was given by hand.
  llvm::Error prepare() {
    // The listening socket oar-launch picked for this node's port and handed over
    // (OAR_LISTEN_FD): the server takes it over instead of binding again.
    node_.heldPort = io_.heldPort;
    if (!node_.heldPort) {
      auto handed = adoptHandedOverPort(io_.getenv(env::kOarListenFd));
      if (!handed)
        return handed.takeError();
      if (handed->held())
        node_.heldPort = std::make_shared<HeldPort>(std::move(*handed));
    }
    if (llvm::Error err = placeNode(node_.options, io_.getenv).moveInto(node_.cluster))
      return err;
    // Set by hand (the flag, else OMP_NUM_THREADS, as OpenMP programs read it), else the default.
    handThreads_ = node_.options.numThreads;
    if (!handThreads_ && node_.cluster.role != Role::Scheduler) // the scheduler computes nothing
      if (llvm::Error err = ompNumThreads(io_.getenv(env::kOmpNumThreads)).moveInto(handThreads_))
        return err;
    return node_.options.keys.load().moveInto(node_.curve);
  }

  /// Joins the scheduler, if the job has one, then takes the node's thread budget.
  llvm::Error joinAndBudget() {
    const ClusterSpec &c = node_.cluster;
    if (!c.scheduler.empty() && c.role != Role::None)
      if (llvm::Error err = joinScheduler())
        return err;
    setComputeThreads(handThreads_.value_or(defaultNodeThreads(c.role, c.trainers, c.pservers)));
    // Which budget the node got, and from where, for its first lines: a launch's default and a
    // hand setting that lead to the same budget then read alike (bench/dist_mlp.sh compares so).
    node_.computeThreads =
        describeComputeThreads(node_.options.numThreads ? "--num-threads"
                               : handThreads_           ? env::kOmpNumThreads
                                              : "the default for a " + roleName(c.role).str());
    return llvm::Error::success();
  }

  llvm::Error joinScheduler() {
    auto link = joinThroughScheduler(
        node_.cluster, node_.curve, node_.options.place.registerTimeout,
        [this](const std::string &line) { log(line); }, io_.shouldStop, node_.heldPort);
    if (!link)
      return link.takeError();
    link_ = std::move(*link);
    SchedulerLink *l = link_.get();
    node_.goneTrainers = [l] { return l->goneTrainers(); };
    return llvm::Error::success();
  }

  /// The scheduler's input: the job's counts and launch, its settings, its keys and its port
  /// (the scheduler role's own; MPI rank 0's thread leaves the port to its pserver).
  SchedulerOptions schedulerOptions(bool holdsPort) const {
    const ClusterSpec &c = node_.cluster;
    SchedulerOptions s;
    if (holdsPort)
      s.heldPort = node_.heldPort;
    s.endpoint = !c.scheduler.empty() ? c.scheduler : c.currentEndpoint;
    s.bind = node_.options.place.bind;
    s.pservers = c.pserverCount;
    s.trainers = c.trainers;
    s.jobId = c.jobId;
    s.registerTimeout = node_.options.place.registerTimeout;
    s.settings = node_.options.scheduler;
    s.curve = node_.curve;
    s.elastic = node_.options.place.elastic;
    s.log = io_.log;
    s.shouldStop = io_.shouldStop;
    return s;
  }

  int runRole() {
    if (node_.cluster.role == Role::None) {
      if (llvm::Error err = runOneMachine(node_.options, io_))
        return fail(std::move(err));
      return 0;
    }
    node_.log = io_.log;
    node_.shouldStop = io_.shouldStop;
    node_.checkpointRequested = io_.checkpointRequested;
    node_.singleMachine = io_.programs;
    node_.drive = io_.drive;
    if (io_.onCollectiveStuck) // named as the failed collective would name it
      node_.onCollectiveStuck = [end = io_.onCollectiveStuck,
                                 who = "trainer " + std::to_string(node_.cluster.trainerId) +
                                       ": "](const std::string &what) { end(who + what); };
    auto progs = jobPrograms();
    if (!progs)
      return fail(progs.takeError());
    if (node_.cluster.role == Role::Pserver) {
      if (llvm::Error err = runPserver(*progs, node_)) {
        // Failing because a trainer failed gets its own status, so a launcher names the trainer.
        bool consequence = err.isA<TrainersFailedError>();
        return fail(std::move(err), consequence ? kExitOtherNodeFailed : 1);
      }
      return 0;
    }
    if (llvm::Error err = runJobTrainer(*progs))
      return fail(std::move(err));
    return 0;
  }

  /// What a node of a job checks before it loads its programs, then the programs.
  llvm::Expected<NodePrograms> jobPrograms() {
    const NodeOptions &o = node_.options;
    const ClusterSpec &c = node_.cluster;
    if (o.dir.empty() && (o.mainPath.empty() || o.startupPath.empty()) && !io_.programs)
      return makeError("give --dir (transpiled) or --main and --startup (single-machine)");
    if (io_.drive && c.role != Role::Trainer)
      return makeError("this {0} was started for a training loop of its caller's, which only "
                       "a trainer runs",
                       roleName(c.role));
    if (o.config.mode == Mode::Collective && c.role != Role::Trainer)
      return makeError("--mode collective: every node is a trainer (no pservers, no scheduler); "
                       "this one is a {0}",
                       roleName(c.role));
    if (!o.trainer.predictPath.empty())
      return makeError("--predict runs on one machine: give it --main, --startup and --load "
                       "without a role (or export the job's save with oar-export)");
    if (o.place.elastic && o.config.hybrid)
      return makeError("--elastic is for async PS jobs; a hybrid job's trainers all-reduce among "
                       "a fixed group");
    if (o.place.elastic && o.config.mode != Mode::Async)
      return makeError("--elastic is for async jobs (trainers join and leave while the others "
                       "train); this one runs {0}",
                       modeName(o.config.mode));
    auto progs = nodePrograms(node_);
    if (!progs)
      return progs.takeError();
    // Collective and hybrid trainers meet the other trainers.
    bool meetsTrainers =
        progs->main.dist().hybrid() || progs->main.dist().mode() == modeName(Mode::Collective);
    if (c.role == Role::Trainer && meetsTrainers)
      if (llvm::Error err = placeCollectiveTrainer(node_, io_.getenv))
        return err;
    return progs;
  }

  /// A trainer of a job: its data, device, progress and best model, its run, its last lines.
  llvm::Error runJobTrainer(NodePrograms &progs) {
    const NodeOptions &o = node_.options;
    int64_t id = node_.cluster.trainerId;
    std::string what = llvm::formatv("trainer {0}'s program", id).str();
    if (llvm::Error err = applyFeedOverrides(progs.main, o.trainer.feed, what))
      return err;
    if (llvm::Error err = computePlace(o.trainer, progs.main, what).moveInto(node_.place))
      return err;
    auto output = StepOutput::open(*io_.out, progs.main, id, node_.cluster.trainers,
                                   o.trainer.metricsPath, o.trainer.logEvery);
    if (!output)
      return output.takeError();
    node_.onStep = (*output)->stepCallback();
    if (llvm::Error err = setEvaluations(o.trainer, node_.train))
      return err;
    node_.train.onEval = (*output)->evalCallback();
    // Trainer 0 evaluates, keeps the best and decides when to stop; the others follow (a
    // collective or hybrid job's at each evaluation's step, a PS job's at their next reply). In
    // a PS or hybrid job the pservers write the tables' part of a best save.
    bool collective = progs.main.dist().mode() == modeName(Mode::Collective);
    if (!collective && id == 0 && !o.trainer.keepBest.empty())
      node_.bestTablesSave = std::make_shared<std::function<llvm::Error()>>();
    std::optional<BestModel> best;
    if (llvm::Error err =
            bestModelOf(o.trainer, progs.main, o.saveDir, id == 0, node_.bestTablesSave)
                .moveInto(best))
      return err;
    if (best && id == 0)
      node_.train.afterEval = best->callback(progs.main);
    std::optional<EvalResult> eval;
    if (llvm::Error err = runTrainer(progs, node_, eval))
      return err;
    (*output)->summary(llvm::formatv("trainer {0}: ", id).str());
    if (best && id == 0 && !best->summary().empty())
      *io_.out << best->summary() << "\n";
    if (eval)
      printEval(*io_.out, *eval);
    if (!o.saveDir.empty() && id == 0)
      *io_.out << "saved parameters to " << o.saveDir << "\n";
    return llvm::Error::success();
  }

  const NodeIo &io_;
  Node node_;
  /// The scheduler link for the node's life; its destructor (on an error too) tells the
  /// scheduler this node ended.
  std::unique_ptr<SchedulerLink> link_;
  std::optional<int> handThreads_;
  std::atomic<int> schedulerStatus_{0};
  std::atomic<bool> nodeFailed_{false};
};

} // namespace

int startNode(const NodeOptions &options, const NodeIo &io) {
  // What a caller left unset: no environment, output nowhere.
  NodeIo given = io;
  if (!given.getenv)
    given.getenv = [](const char *) -> const char * { return nullptr; };
  llvm::raw_null_ostream nowhere;
  if (!given.out)
    given.out = &nowhere;
  return NodeStart(options, given).run();
}

} // namespace oar::runtime
