// A trainer of a parameter-server job (sync, async, GEO; hybrid jobs' too, which all-reduce
// their dense params among the trainers and keep only the tables on the pservers). A collective
// job's trainer is collective_trainer.cc's.
#include "executor/threads.h"
#include "ir/names.h"
#include "runtime/node/node.h"
#include "runtime/node/run_env.h"
#include "runtime/node/save_lock.h"
#include "runtime/node/trainer_group.h"
#include "runtime/node/trainer_run.h"
#include "support/error.h"
#include "train/learning_rate.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// How many times in a row a trainer starts recovery over when another pserver is lost during
/// it: each waits at most the connect timeout, so a job whose pservers keep dying still ends.
constexpr int kMaxRecoveriesInARow = 8;

void logTo(const Node &node, const std::string &line) {
  if (node.log)
    node.log(line);
}

/// Connects to every pserver and says what it found: links, a resumed step.
llvm::Error connectToPservers(const Node &node, Communicator &comm, const JobIdentity &job,
                              size_t pservers) {
  int64_t id = node.cluster.trainerId;
  if (llvm::Error err = comm.connect(job)) {
    std::string why = llvm::toString(std::move(err));
    comm.abandon(why);
    return makeError("{0}", why);
  }
  if (!node.computeThreads.empty())
    logTo(node, llvm::formatv("trainer {0}: {1}", id, node.computeThreads).str());
  if (size_t linked = comm.linkedPservers(); linked > 0)
    logTo(node, llvm::formatv("trainer {0}: {1} of {2} pserver(s) reached over direct links "
                              "(ZMTP on the trainer's thread, no ZeroMQ I/O thread)",
                              id, linked, pservers)
                    .str());
  if (comm.step() > 0)
    logTo(node, llvm::formatv("trainer {0}: the pservers resumed from their checkpoint of step "
                              "{1}; training goes on from there",
                              id, comm.step())
                    .str());
  return llvm::Error::success();
}

/// A hybrid job's trainers meet: their dense params stay on the trainers, which all-reduce
/// their gradients. The pservers hear of any failure here.
llvm::Expected<std::unique_ptr<CollectiveGroup>>
joinHybridGroup(const proto::DistributeInfo &dist, const Node &node, Communicator &comm) {
  if (comm.step() > 0) {
    std::string why = llvm::formatv("trainer {0}: the pservers resumed from their checkpoint of "
                                    "step {1}, but a hybrid job's dense params live on the "
                                    "trainers, which keep no checkpoint yet: start it afresh",
                                    node.cluster.trainerId, comm.step())
                          .str();
    comm.abandon(why);
    return makeError("{0}", why);
  }
  // A collective stuck on a rank that is gone ends the process (onCollectiveStuck): the
  // pservers first hear why. The trainer's thread is then inside the all-reduce, not using
  // the communicator.
  Node joining = node;
  if (node.onCollectiveStuck)
    joining.onCollectiveStuck = [&comm, end = node.onCollectiveStuck](const std::string &what) {
      llvm::consumeError(comm.complete(what));
      end(what);
    };
  auto joined = joinTrainers(dist, joining);
  if (!joined) {
    std::string why = llvm::toString(joined.takeError());
    comm.abandon(why);
    return makeError("{0}", why);
  }
  return std::move(*joined);
}

/// A hybrid job's start: trainer 0 loads the dense state (--load; the pservers load the
/// tables) and every trainer takes its bits.
llvm::Error startHybridState(const NodePrograms &progs, const Node &node, CollectiveGroup &group,
                             Scope &scope) {
  if (node.cluster.trainerId == 0 && !node.options.loadDir.empty())
    if (llvm::Error err =
            loadTrainerState(progs.main, progs.startup, scope, node.options.loadDir,
                             node.options.loadStep, "trainer 0"))
      return err;
  return broadcastState(group, progs.main, scope);
}

/// A pserver that went away may come back from its checkpoint (restarted with the same flags):
/// wait for it, bring every pserver back to that step, fetch its params and go on from there.
/// Another pserver may be lost while the job goes back (or fetches the params again): that is
/// one more pserver to wait for, so recovery starts over, a bounded number of times.
std::function<llvm::Expected<int64_t>(llvm::Error)>
recoveryOf(const Node &node, Communicator &comm, const JobIdentity &job, Executor &exec,
           const proto::Program &startup, Scope &scope) {
  return [&node, &comm, job, &exec, &startup, &scope](llvm::Error err) -> llvm::Expected<int64_t> {
    int64_t id = node.cluster.trainerId;
    for (int attempt = 1;; ++attempt) {
      if (!comm.needsRecovery() || attempt > kMaxRecoveriesInARow)
        return std::move(err);
      std::string why = llvm::toString(std::move(err));
      logTo(node, llvm::formatv("trainer {0}: {1}; waiting up to {2} ms (the connect timeout) "
                                "for it to restart from its checkpoint",
                                id, why, node.options.timeouts.connect.count())
                      .str());
      err = comm.reconnect(job);
      if (!err)
        if (llvm::Error e = exec.run(startup, scope)) // the params of that step
          err = addContext(std::move(e), "fetching the params again");
      if (!err)
        break;
    }
    logTo(node,
          llvm::formatv("trainer {0}: every pserver is back at step {1}; going on", id, comm.step())
              .str());
    return comm.step();
  };
}

/// How this trainer trains: its share of the data, its evaluations, its clock, its recovery.
TrainOptions psTrainOptions(const Node &node, const proto::DistributeInfo &dist, Mode mode,
                            Communicator &comm) {
  TrainOptions train = trainerTrainOptions(node, dist.trainers());
  if (node.cluster.trainerId != 0) // trainer 0 scores the model, as it does at the end
    train.evalEverySteps = 0, train.evalEveryEpoch = false;
  train.startStep = comm.step();
  // Async and GEO have no barrier to count steps by: each step moves the trainer's clock, which
  // its messages carry, so that a pserver's checkpoint records where each trainer was.
  if (mode != Mode::Sync)
    train.afterStep = [&comm, next = train.afterStep](const StepReport &r,
                                                      const Scope &s) -> llvm::Error {
      comm.advanceStep();
      return next ? next(r, s) : llvm::Error::success();
    };
  return train;
}

/// --keep-best and --early-stop: trainer 0 evaluates and decides. A hybrid job's trainers
/// reach each evaluation's step together and learn the decision there (a gather); a PS job's
/// others learn it from a pserver's next reply, and end after the step they are in.
void followEarlyStop(const Node &node, TrainOptions &train, Communicator &comm,
                     CollectiveGroup *group) {
  const TrainerOptions &o = node.options.trainer;
  if (o.keepBest.empty() && o.earlyStop == 0)
    return;
  int64_t id = node.cluster.trainerId;
  if (group) {
    train.evalEverySteps = node.train.evalEverySteps;
    train.evalEveryEpoch = node.train.evalEveryEpoch;
    agreeOnEarlyStop(*group, train, id);
    return;
  }
  if (id == 0)
    train.agreeOnStop = [&comm](int64_t, bool stop) -> llvm::Expected<bool> {
      if (stop)
        if (llvm::Error err = comm.stopJob())
          return std::move(err);
      return stop;
    };
  else
    train.jobStopped = [&comm] { return comm.jobStopped(); };
}

/// "trainer T: distributed tables: ..." per step, after training.
void logTableTraffic(const Node &node, const RunEnv::TableTraffic &t, size_t steps) {
  if (t.ids == 0 || steps == 0)
    return;
  double n = static_cast<double>(steps);
  logTo(node, llvm::formatv("trainer {0}: distributed tables: {1:f0} ids a step, {2:f0} keys "
                            "sent (each once per batch): {3:f0} bytes of keys and rows a step, "
                            "{4:f0} without de-duplication",
                            node.cluster.trainerId, t.ids / n, t.keys / n, t.bytes / n,
                            t.bytesWithoutDedup / n)
                  .str());
}

/// GEO: pushes what changed since the last sync; the global model is then what is evaluated
/// and saved, not this trainer's rebased local copy.
llvm::Error finishGeo(Executor &exec, const proto::Program &main, Scope &scope, RunEnv &env) {
  env.forceGeoSync = true;
  for (const proto::Op &op : main.blocks(0).ops())
    if (op.type() == "geo_sync") {
      if (llvm::Error err = exec.runOp(op, scope, "final geo_sync"))
        return err;
      for (const std::string &param : opInputs(op, "Param"))
        scope.get(param) = scope.find(syncedName(param))->clone();
    }
  return llvm::Error::success();
}

/// Everything after the connection: the state, training, the end of the job for this trainer.
llvm::Error trainWithPservers(const NodePrograms &progs, const Node &node, Mode mode,
                              Communicator &comm, const JobIdentity &job,
                              std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  int64_t id = node.cluster.trainerId;
  std::unique_ptr<CollectiveGroup> group;
  if (dist.hybrid())
    if (llvm::Error err = joinHybridGroup(dist, node, comm).moveInto(group))
      return err;
  TrainerRun run(node, progs);
  run.env.comm = &comm;
  run.env.group = group.get();
  // A failure from here on is told to the pservers, which stop waiting for this trainer.
  auto failed = [&comm](llvm::Error err) {
    std::string why = llvm::toString(std::move(err));
    llvm::consumeError(comm.complete(why));
    return makeError("{0}", why);
  };
  if (llvm::Error err = run.start())
    return err;
  if (group)
    if (llvm::Error err = startHybridState(progs, node, *group, run.scope))
      return failed(std::move(err));
  if (node.options.learningRate) // a hybrid trainer's dense optimizers (a PS trainer has none)
    if (llvm::Error err = setLearningRate(progs.main, run.scope, *node.options.learningRate))
      return err;
  TrainOptions train = psTrainOptions(node, dist, mode, comm);
  train.recover = recoveryOf(node, comm, job, run.exec, progs.startup, run.scope);
  if (group) {
    agreeOnSteps(*group, train);
    // Going back to a pserver checkpoint would leave the dense params, which no pserver holds,
    // at this step: a hybrid job does not recover.
    train.recover = nullptr;
  }
  followEarlyStop(node, train, comm, group.get());
  // Trainer 0's best save reaches the pservers through this connection, while it lasts.
  struct BestTables {
    std::shared_ptr<std::function<llvm::Error()>> hook;
    ~BestTables() {
      if (hook)
        *hook = nullptr;
    }
  } bestTables{node.bestTablesSave};
  if (bestTables.hook)
    *bestTables.hook = [&comm] { return comm.saveBest(); };
  std::string saveDir; // a driver's, over --save
  auto reports = node.options.evalOnly
                     ? llvm::Expected<std::vector<StepReport>>(std::vector<StepReport>{})
                     : trainSteps(node, run, progs.main, train, saveDir);
  if (!reports) // let the pservers stop waiting for us, and say why
    return failed(addContext(reports.takeError(), "trainer " + std::to_string(id)));
  logTableTraffic(node, run.env.tableTraffic, reports->size());
  if (mode == Mode::Geo)
    if (llvm::Error err = finishGeo(run.exec, progs.main, run.scope, run.env))
      return err;
  if (llvm::Error err = run.evaluateAndSave(testResult, /*withScores=*/true, saveDir))
    return err;
  return comm.complete();
}

} // namespace

llvm::Error runTrainer(const NodePrograms &progs, const Node &node,
                       std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  if (dist.role() != roleName(Role::Trainer))
    return makeError("this program is a {0} program, not a trainer's",
                     dist.role().empty() ? "single-machine" : dist.role());
  auto mode = parseMode(dist.mode());
  if (!mode)
    return addContext(mode.takeError(), "the trainer program");
  if (*mode == Mode::Collective)
    return runCollectiveTrainer(progs, node, testResult);
  int64_t id = node.cluster.trainerId;
  if (id < 0 || (id >= dist.trainers() && !node.options.place.elastic))
    return makeError("trainer id {0} is out of range for {1} trainers", id, dist.trainers());
  // Held until this function returns, so no other job saves into the directory meanwhile.
  auto saveLock = lockSaveDir(id == 0 ? node.options.saveDir : "",
                              saveLockJob(node.cluster.jobId, dist.plan_digest()));
  if (!saveLock)
    return saveLock.takeError();
  std::vector<std::string> endpoints(dist.pservers().begin(), dist.pservers().end());
  if (node.curve.enabled() && node.curve.serverKey.empty())
    return makeError("a trainer with a CURVE key pair needs the pservers' public key "
                     "(--curve-server-key FILE)");
  Communicator comm(id, endpoints, node.options.timeouts, node.curve, node.shouldStop);
  JobIdentity job{*mode, dist.trainers(), dist.plan_digest(), node.cluster.jobId};
  if (llvm::Error err = connectToPservers(node, comm, job, endpoints.size()))
    return err;
  return trainWithPservers(progs, node, *mode, comm, job, testResult);
}

} // namespace oar::runtime
