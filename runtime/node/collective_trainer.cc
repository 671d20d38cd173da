// A trainer of a collective job: no pservers. The ranks start from rank 0's params (those it
// loaded, or its newest checkpoint, which it writes with --checkpoint-dir), average their
// gradients every step (c_allreduce_avg, or gradient buckets: c_allreduce_start and
// c_allreduce_wait), and each runs the optimizer itself.
#include "checkpoint/training_checkpoints.h"
#include "runtime/node/node.h"
#include "runtime/node/save_lock.h"
#include "runtime/node/trainer_group.h"
#include "runtime/node/trainer_run.h"
#include "support/error.h"
#include "train/learning_rate.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// Trainer 0's checkpoints (every trainer ends each step with the same state, so its hold the
/// job's), and the step the newest says, over --load. Other trainers: none, and step 0.
llvm::Expected<int64_t> resumeCheckpoints(const NodePrograms &progs, const Node &node, Scope &scope,
                                          std::optional<TrainingCheckpoints> &checkpoints) {
  const CheckpointOptions &c = node.options.checkpoints;
  std::string who = "trainer " + std::to_string(node.cluster.trainerId);
  if (node.cluster.trainerId != 0 || c.dir.empty())
    return 0;
  checkpoints.emplace(c.dir, progs.main, progs.startup, c.every, c.keep);
  auto resumed = checkpoints->resume(scope, [&](const std::string &line) {
    if (node.log)
      node.log(who + ": " + line);
  });
  if (!resumed)
    return addContext(resumed.takeError(), who);
  return *resumed;
}

/// How the ranks train: trainer 0 scores the model (with early stopping, the others hear its
/// decision at each evaluation's step), from trainer 0's step, checkpointing there.
TrainOptions collectiveTrainOptions(const Node &node, CollectiveGroup &group, int64_t ranks,
                                    int64_t startStep,
                                    std::optional<TrainingCheckpoints> &checkpoints) {
  int64_t id = node.cluster.trainerId;
  TrainOptions train = trainerTrainOptions(node, ranks);
  if (node.options.trainer.earlyStop > 0)
    agreeOnEarlyStop(group, train, id);
  else if (id != 0)
    train.evalEverySteps = 0, train.evalEveryEpoch = false;
  train.startStep = startStep;
  if (checkpoints)
    train.afterStep = [&checkpoints, next = train.afterStep](const StepReport &r,
                                                             const Scope &s) -> llvm::Error {
      if (next)
        if (llvm::Error err = next(r, s))
          return err;
      return checkpoints->afterStep(r, s);
    };
  agreeOnSteps(group, train);
  return train;
}

} // namespace

llvm::Error runCollectiveTrainer(const NodePrograms &progs, const Node &node,
                                 std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  const NodeOptions &o = node.options;
  int64_t id = node.cluster.trainerId, ranks = dist.trainers();
  if (id < 0 || id >= ranks)
    return makeError("trainer id {0} is out of range for {1} trainers", id, ranks);
  std::string lockJob = saveLockJob(node.cluster.jobId, dist.plan_digest());
  auto saveLock = lockSaveDir(id == 0 ? o.saveDir : "", lockJob);
  if (!saveLock)
    return saveLock.takeError();
  auto checkpointLock = lockSaveDir(id == 0 ? o.checkpoints.dir : "", lockJob, "--checkpoint-dir");
  if (!checkpointLock)
    return checkpointLock.takeError();
  auto group = joinTrainers(dist, node);
  if (!group)
    return group.takeError();
  std::string who = "trainer " + std::to_string(id);
  if (!node.computeThreads.empty() && node.log)
    node.log(who + ": " + node.computeThreads);
  TrainerRun run(node, progs);
  run.env.group = group->get();
  if (llvm::Error err = run.start())
    return err;
  if (id == 0 && !o.loadDir.empty())
    if (llvm::Error err =
            loadTrainerState(progs.main, progs.startup, run.scope, o.loadDir, o.loadStep, who))
      return err;
  std::optional<TrainingCheckpoints> checkpoints;
  int64_t startStep = 0; // trainer 0's newest checkpoint's, over --load
  if (llvm::Error err = resumeCheckpoints(progs, node, run.scope, checkpoints).moveInto(startStep))
    return err;
  if (llvm::Error err = broadcastState(**group, progs.main, run.scope))
    return err;
  if (llvm::Error err = (*group)->broadcast(&startStep, sizeof startStep, 0))
    return addContext(std::move(err), "sending trainer 0's step to resume at");
  if (o.learningRate)
    if (llvm::Error err = setLearningRate(progs.main, run.scope, *o.learningRate))
      return err;
  TrainOptions train = collectiveTrainOptions(node, **group, ranks, startStep, checkpoints);
  std::string saveDir; // a driver's, over --save
  auto reports = trainSteps(node, run, progs.main, train, saveDir);
  if (!reports) // the other ranks' next all-reduce fails: they end too
    return addContext(reports.takeError(), who);
  if (checkpoints)
    if (llvm::Error err = checkpoints->finish(*reports, run.scope))
      return addContext(std::move(err), who);
  return run.evaluateAndSave(testResult, /*withScores=*/false, saveDir);
}

} // namespace oar::runtime
