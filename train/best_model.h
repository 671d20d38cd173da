// --keep-best and --early-stop: after each evaluation, keep the params of the best one and stop
// when the metric has not improved for N evaluations.
#pragma once

#include "train/training_loop.h"

namespace oar {

struct BestModelOptions {
  std::string metric;  ///< "loss" (lower is better) or a metric of the program, e.g. "auc"
  std::string saveDir; ///< where the best evaluation's model goes ("" keeps none), by `save`
  std::function<llvm::Error(const Scope &)> save;
  int64_t patience = 0; ///< stop after this many evaluations without improvement (0: never)
};

/// Follows the evaluations of one training run.
class BestModel {
public:
  /// Checks the options against `main`: a metric it has, a metric given with --early-stop.
  static llvm::Expected<BestModel> create(const proto::Program &main, BestModelOptions opts);
  /// Records an evaluation; saves `scope`'s params when it is the best so far. Returns whether
  /// training should stop.
  llvm::Expected<bool> observe(const proto::Program &main, const StepReport &r,
                               const EvalResult &eval, const Scope &scope);
  /// "best auc 0.7712 after step 399 (epoch 1), saved to DIR" (and, when it stopped training,
  /// "; stopped early after step 599: 2 evaluations without a better auc"), or "" before any
  /// evaluation.
  std::string summary() const;
  /// The options as TrainOptions::afterEval.
  std::function<llvm::Expected<bool>(const StepReport &, const EvalResult &, const Scope &)>
  callback(const proto::Program &main);

private:
  explicit BestModel(BestModelOptions opts) : opts_(std::move(opts)) {}
  BestModelOptions opts_;
  bool higherIsBetter_ = false, seen_ = false;
  double best_ = 0;
  int64_t bestStep_ = -1, bestEpoch_ = -1, sinceBest_ = 0, stoppedAfter_ = -1;
};

} // namespace oar
