// One machine's checkpoints while it trains: every persistable var (params, optimizer and metric
// state) at a step, with the step and epoch, in DIR/step-<N>/ (checkpoint/step_checkpoints.h).
// A run started again with the same command resumes from the newest and ends with the bits of a
// run never interrupted: the data is read again up to that step (its order, shuffles included,
// is fixed by the feed's seed), so the position and the shuffle state need no file of their own.
#pragma once

#include "checkpoint/background_write.h"
#include "checkpoint/step_checkpoints.h"
#include "train/training_loop.h"

namespace oar {

class TrainingCheckpoints {
public:
  /// Checkpoints of the job `main`/`startup` (its hash names them: another model, optimizer or
  /// feed never loads them; more epochs than before do) in `dir`, every `every` steps (0: only
  /// the last), keeping `keep`.
  TrainingCheckpoints(std::string dir, const proto::Program &main, const proto::Program &startup,
                      int64_t every, int keep);

  /// Loads the newest checkpoint of this job into `scope`, if any; returns its step (0: none).
  /// `log` gets a line saying where it resumed.
  llvm::Expected<int64_t> resume(Scope &scope, const std::function<void(const std::string &)> &log);
  /// TrainOptions::afterStep: a checkpoint every `every` steps, written off the training thread
  /// from a copy of the vars (the write before it finishes first; its error comes back here).
  llvm::Error afterStep(const StepReport &r, const Scope &scope);
  /// Writes the checkpoint of the last step, so that starting the run again finds it done, and
  /// waits for every write.
  llvm::Error finish(const std::vector<StepReport> &reports, const Scope &scope);

private:
  llvm::Error write(int64_t stepsDone, int64_t epoch, const Scope &scope);
  StepCheckpoints steps_;
  BackgroundWrite writer_;
  const proto::Program &main_;
  int64_t every_;
  int64_t resumedAt_ = 0;
};

} // namespace oar
