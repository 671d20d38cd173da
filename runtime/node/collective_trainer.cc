// A trainer of a collective job: no pservers. The ranks start from rank 0's params (those it
// loaded, or its newest checkpoint, which it writes with --checkpoint-dir), average their
// gradients every step (c_allreduce_avg, or gradient buckets: c_allreduce_start and
// c_allreduce_wait), and each runs the optimizer itself.
#include "checkpoint/training_checkpoints.h"
#include "executor/device.h"
#include "runtime/node/node.h"
#include "runtime/node/run_env.h"
#include "runtime/node/save_lock.h"
#include "runtime/node/trainer_group.h"
#include "support/error.h"
#include "support/signals.h"
#include "train/learning_rate.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

llvm::Error runCollectiveTrainer(const NodePrograms &progs, const NodeOptions &opts,
                                 std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  int64_t id = opts.cluster.trainerId, ranks = dist.trainers();
  if (id < 0 || id >= ranks)
    return makeError("trainer id {0} is out of range for {1} trainers", id, ranks);
  std::string lockJob = saveLockJob(opts.cluster.jobId, dist.plan_digest());
  auto saveLock = lockSaveDir(id == 0 ? opts.saveDir : "", lockJob);
  if (!saveLock)
    return saveLock.takeError();
  // Every trainer ends each step with the same state: trainer 0's checkpoints hold the job's.
  auto checkpointLock = lockSaveDir(id == 0 ? opts.checkpointDir : "", lockJob, "--checkpoint-dir");
  if (!checkpointLock)
    return checkpointLock.takeError();
  auto group = joinTrainers(dist, opts);
  if (!group)
    return group.takeError();
  std::string who = "trainer " + std::to_string(id);
  if (!opts.computeThreads.empty() && opts.log)
    opts.log(who + ": " + opts.computeThreads);
  RunEnv env;
  env.group = group->get();
  env.collectiveTimeout = opts.timeouts.reply; // as each collective's
  env.program = &progs.main;
  if (llvm::Error err = usePlace(opts.place))
    return addContext(std::move(err), who);
  Executor exec(opts.place.device);
  exec.setEnv(&env);
  Scope scope;
  // A bucket still summing when a step fails writes into the scope's gradients: it ends first.
  struct BucketsFirst {
    RunEnv &env;
    ~BucketsFirst() { env.buckets.reset(); }
  } bucketsFirst{env};
  if (llvm::Error err = exec.run(progs.startup, scope))
    return addContext(std::move(err), who + " startup");
  if (id == 0 && !opts.loadDir.empty())
    if (llvm::Error err = loadTrainerState(progs.main, progs.startup, scope, opts.loadDir, who))
      return err;
  std::optional<TrainingCheckpoints> checkpoints;
  int64_t startStep = 0; // trainer 0's newest checkpoint's, over --load
  if (id == 0 && !opts.checkpointDir.empty()) {
    checkpoints.emplace(opts.checkpointDir, progs.main, progs.startup, opts.checkpointEvery,
                        opts.checkpointKeep);
    auto resumed = checkpoints->resume(scope, [&](const std::string &line) {
      if (opts.log)
        opts.log(who + ": " + line);
    });
    if (!resumed)
      return addContext(resumed.takeError(), who);
    startStep = *resumed;
  }
  if (llvm::Error err = broadcastState(**group, progs.main, scope))
    return err;
  if (llvm::Error err = (*group)->broadcast(&startStep, sizeof startStep, 0))
    return addContext(std::move(err), "sending trainer 0's step to resume at");
  if (opts.learningRate)
    if (llvm::Error err = setLearningRate(progs.main, scope, *opts.learningRate))
      return err;
  TrainOptions train = opts.train;
  // Trainer 0 scores the model; with early stopping the others hear its decision at each
  // evaluation's step.
  if (opts.earlyStop)
    agreeOnEarlyStop(**group, train, id);
  else if (id != 0)
    train.evalEverySteps = 0, train.evalEveryEpoch = false;
  train.trainerId = id; // the data shard
  train.trainers = ranks;
  train.onStep = opts.onStep;
  train.shouldStop = stopRequested;
  train.startStep = startStep;
  if (checkpoints)
    train.afterStep = [&, next = train.afterStep](const StepReport &r, const Scope &s) {
      if (next)
        if (llvm::Error err = next(r, s))
          return err;
      return checkpoints->afterStep(r, s);
    };
  agreeOnSteps(**group, train);
  auto reports = trainLoop(exec, progs.main, scope, train);
  if (!reports) // the other ranks' next all-reduce fails: they end too
    return addContext(reports.takeError(), who);
  if (checkpoints)
    if (llvm::Error err = checkpoints->finish(*reports, scope))
      return addContext(std::move(err), who);
  if (id == 0 && progs.main.has_test_feed() && progs.main.test_feed().columns_size() > 0) {
    auto eval = evaluate(exec, progs.main, scope, progs.main.test_feed());
    if (!eval)
      return eval.takeError();
    testResult = *eval;
  }
  if (id == 0 && !opts.saveDir.empty())
    return savePersistables(progs.main, scope, opts.saveDir, /*parametersOnly=*/true);
  return llvm::Error::success();
}

} // namespace oar::runtime
