// Training over a program's data feed, evaluation on its test feed, and checkpoints.
#pragma once

#include <functional>

#include "executor/executor.h"
#include "feed/batch_source.h"

namespace oar {

/// What one training step did.
struct StepReport {
  int64_t step = 0, epoch = 0, rows = 0, totalSteps = 0;
  double loss = 0, samplesPerSec = 0;
  std::vector<double> metrics; ///< the program's metrics on this batch, in declaration order
};

/// Loss and metrics averaged over a feed's rows (forward ops only).
struct EvalResult {
  int64_t rows = 0;
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;
};

struct TrainOptions {
  int64_t trainerId = 0, trainers = 1; // which share of the rows this process trains on
  /// Called after every step (progress display, metrics file).
  std::function<void(const StepReport &)> onStep;
  /// Checked before every step; true ends training with an error (e.g. after SIGTERM).
  std::function<bool()> shouldStop;
  /// Evaluate the test feed every N steps (0: never) and/or after every epoch; each result
  /// goes to onEval with the report of the step it followed.
  int64_t evalEverySteps = 0;
  bool evalEveryEpoch = false;
  std::function<void(const StepReport &, const EvalResult &)> onEval;
  /// Called after onEval with the model evaluated; true ends training after this step (early
  /// stopping), an error ends it with the error.
  std::function<llvm::Expected<bool>(const StepReport &, const EvalResult &, const Scope &)>
      afterEval;
  /// Whether this process runs the evaluations. One that does not (a collective job's trainer
  /// other than 0) still reaches each evaluation's step, and calls agreeOnStop there.
  bool evaluates = true;
  /// Called at every evaluation's step with this process's wish to stop; returns the job's
  /// decision, so that every trainer stops at the same step. Unset: the wish is the decision.
  std::function<llvm::Expected<bool>(int64_t step, bool stop)> agreeOnStop;
  /// Checked after every step: true ends training cleanly after it (a PS job's trainer told by a
  /// pserver that trainer 0 stopped the job). Unset: never.
  std::function<bool()> jobStopped;
  /// A NaN or inf loss ends training with an error naming the step and the first var that
  /// went non-finite; false trains on.
  bool stopOnNonFinite = true;
  /// Steps already trained (a job resumed from a checkpoint): that many batches are skipped.
  int64_t startStep = 0;
  /// Called after every step with the model as it stands (a checkpoint); an error ends training.
  std::function<llvm::Error(const StepReport &, const Scope &)> afterStep;
  /// Called when a step fails: returns the step to go on from (the model and the data position
  /// go back to it), or an error, the step's own when it cannot recover. Unset: none.
  std::function<llvm::Expected<int64_t>(llvm::Error)> recover;
  /// Trainers that must all take the same steps (a collective job: each step is an all-reduce
  /// among them). Called once before the first step with this trainer's batches an epoch (0:
  /// not known ahead, a streamed feed); then, where no count was known, before every step with
  /// whether this trainer has a batch, returning whether to train it. Either returns an error
  /// when the trainers disagree.
  std::function<llvm::Error(int64_t batchesPerEpoch)> agreeOnBatches;
  std::function<llvm::Expected<bool>(int64_t step, bool hasBatch)> agreeOnStep;
};

/// Runs block 0 of `main` once per batch of its train feed. Returns each step's report.
llvm::Expected<std::vector<StepReport>> trainLoop(Executor &exec, const proto::Program &main,
                                                  Scope &scope, const TrainOptions &opts);

/// Called after each evaluated batch with the scope holding its predictions.
using EvalBatchHook = std::function<void(const Scope &)>;

/// Scores the model in `scope` on `feed` (read once, in order).
llvm::Expected<EvalResult> evaluate(Executor &exec, const proto::Program &main, Scope &scope,
                                    const proto::DataFeed &feed,
                                    const EvalBatchHook &afterBatch = {});
/// The same over a source opened already (openBatchSource of the feed, read once in order), for
/// repeated evaluations: rewinds it first.
llvm::Expected<EvalResult> evaluate(Executor &exec, const proto::Program &main, Scope &scope,
                                    BatchSource &rows, const EvalBatchHook &afterBatch = {});

/// Loads `dir/<var>.npy` for persistable vars of `main`; each must match the var's declared
/// dtype and shape and hold finite values. Every parameter must have a file; other state (optimizer
/// moments) is optional. Returns the names loaded.
llvm::Expected<std::vector<std::string>> loadPersistables(const proto::Program &main, Scope &scope,
                                                          llvm::StringRef dir);
/// Writes every persistable var of `main` held by `scope` as `dir/<var>.npy`; with
/// `parametersOnly`, just the parameters.
llvm::Error savePersistables(const proto::Program &main, const Scope &scope, llvm::StringRef dir,
                             bool parametersOnly = false);
/// Checks a tensor read for `var` against the var's declaration.
llvm::Error checkAgainstVar(const Tensor &t, const proto::Var &var, llvm::StringRef source);

} // namespace oar
