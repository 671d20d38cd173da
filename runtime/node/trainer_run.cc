// A trainer's executor, scope and end.
#include "runtime/node/trainer_run.h"

#include "serving/inference_program.h"
#include "serving/score_file.h"
#include "support/error.h"

namespace oar::runtime {

TrainerRun::TrainerRun(const Node &node, const NodePrograms &progs)
    : exec(node.place.device), node_(node), progs_(progs) {
  env.collectiveTimeout = node.options.timeouts.reply; // as each collective's
  env.program = &progs.main;
  exec.setEnv(&env);
}

TrainerRun::~TrainerRun() { env.buckets.reset(); }

llvm::Error TrainerRun::start() {
  std::string who = "trainer " + std::to_string(node_.cluster.trainerId);
  // The device is the calling thread's: chosen here, where the trainer's kernels run.
  if (llvm::Error err = usePlace(node_.place))
    return addContext(std::move(err), who);
  if (llvm::Error err = exec.run(progs_.startup, scope))
    return addContext(std::move(err), who + " startup");
  return llvm::Error::success();
}

llvm::Error TrainerRun::evaluateAndSave(std::optional<EvalResult> &testResult, bool withScores,
                                        const std::string &saveDir) {
  if (node_.cluster.trainerId != 0)
    return llvm::Error::success();
  const proto::Program &main = progs_.main;
  if (main.has_test_feed() && main.test_feed().columns_size() > 0) {
    std::unique_ptr<ScoreFile> scores;
    if (withScores && !node_.options.trainer.testScoresPath.empty()) {
      auto outputs = servedOutputs(main);
      if (!outputs)
        return outputs.takeError();
      auto opened = ScoreFile::open(node_.options.trainer.testScoresPath, std::move(*outputs));
      if (!opened)
        return opened.takeError();
      scores = std::move(*opened);
    }
    auto eval = evaluate(exec, main, scope, main.test_feed(), [&](const Scope &s) {
      if (scores)
        scores->write(s);
    });
    if (!eval)
      return eval.takeError();
    if (scores)
      if (llvm::Error err = scores->close())
        return err;
    testResult = *eval;
  }
  const std::string &dir = saveDir.empty() ? node_.options.saveDir : saveDir;
  if (!dir.empty())
    return savePersistables(main, scope, dir, /*parametersOnly=*/true);
  return llvm::Error::success();
}

llvm::Expected<std::vector<StepReport>> trainSteps(const Node &node, TrainerRun &run,
                                                   const proto::Program &main,
                                                   const TrainOptions &train, std::string &saveDir) {
  if (!node.drive)
    return trainLoop(run.exec, main, run.scope, train);
  auto driven = driveSteps(node.drive, run.exec, main, run.scope, train, node.cluster.trainerId);
  if (!driven)
    return driven.takeError();
  saveDir = driven->saveDir;
  return std::move(driven->reports);
}

TrainOptions trainerTrainOptions(const Node &node, int64_t trainers) {
  TrainOptions train = node.train;
  train.trainerId = node.cluster.trainerId % trainers; // the data shard
  train.trainers = trainers;
  train.onStep = node.onStep;
  train.shouldStop = node.shouldStop;
  return train;
}

} // namespace oar::runtime
