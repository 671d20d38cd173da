// What every trainer of a job runs on, whatever its mode: the environment of the distributed
// ops, an executor on its device, its scope, and its end (trainer 0's evaluation and save).
#pragma once

#include <optional>

#include "runtime/node/node.h"
#include "runtime/node/run_env.h"

namespace oar::runtime {

class TrainerRun {
public:
  TrainerRun(const Node &node, const NodePrograms &progs);
  /// A bucket still summing when a step failed writes into the scope's gradients: it ends
  /// before the scope goes.
  ~TrainerRun();

  /// Takes the trainer's device on this thread and runs startup. Errors name the trainer.
  llvm::Error start();
  /// Trainer 0: the test feed's evaluation (with `withScores`, its predictions written to
  /// --test-scores) into `testResult`, then --save (or `saveDir`, a driver's, when given).
  /// Other trainers: nothing.
  llvm::Error evaluateAndSave(std::optional<EvalResult> &testResult, bool withScores,
                              const std::string &saveDir = "");

  RunEnv env;
  Executor exec;
  Scope scope;

private:
  const Node &node_;
  const NodePrograms &progs_;
};

/// The trainer's steps: the caller's (node.drive) or its train feed's; `saveDir` receives where
/// a driver asked trainer 0 to save ("": none asked).
llvm::Expected<std::vector<StepReport>> trainSteps(const Node &node, TrainerRun &run,
                                                   const proto::Program &main,
                                                   const TrainOptions &train, std::string &saveDir);

/// A trainer's TrainOptions: the node's, with this trainer's share of the rows (a trainer that
/// joined an elastic job shares one), its callbacks and its stop check. Evaluations are the
/// caller's to restrict.
TrainOptions trainerTrainOptions(const Node &node, int64_t trainers);

} // namespace oar::runtime
