// A trainer whose steps its caller drives (a Python loop over its own batches) instead of the
// program's train feed: the node connects, runs startup and hands the caller its steps; what a
// trainer does after a step (an async clock, a checkpoint) runs after each of them.
#pragma once

#include <functional>

#include "train/training_loop.h"

namespace oar::runtime {

/// The steps a trainer lends its caller, on the node's thread.
class TrainerSteps {
public:
  virtual ~TrainerSteps() = default;
  /// The trainer's program (transpiled for this node): its data vars are what a step reads.
  virtual const proto::Program &main() const = 0;
  /// Where a step's feeds go and its results are read.
  virtual Scope &scope() = 0;
  /// One step over what the caller put in scope(). An error ends the node with it.
  virtual llvm::Error step() = 0;
  /// This trainer's id in its job.
  virtual int64_t trainerId() const = 0;
};

/// Called on the node's thread once the trainer is ready; returns when the caller's loop is done,
/// with where trainer 0 saves its params at the end, as --save does ("": --save's, if any), or
/// with the error the node ends with. The trainer ends as after its last batch.
using StepDriver = std::function<llvm::Expected<std::string>(TrainerSteps &)>;

/// What the caller's steps came to.
struct DrivenSteps {
  std::vector<StepReport> reports; ///< one per step taken (the step, its loss)
  std::string saveDir;             ///< the driver's
};

/// Runs `driver` over the steps of `main` in `scope`: each step runs block 0, then
/// `opts.afterStep`.
llvm::Expected<DrivenSteps> driveSteps(const StepDriver &driver, Executor &exec,
                                       const proto::Program &main, Scope &scope,
                                       const TrainOptions &opts, int64_t trainerId);

} // namespace oar::runtime
