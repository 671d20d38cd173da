// The metrics CSV: one row per training step and one per evaluation of the test feed.
#pragma once

#include <cstdio>
#include <memory>

#include "train/training_loop.h"

namespace oar {

/// Writes `step,epoch,phase,loss,<metric...>,samples_per_sec`: phase `train` rows carry the
/// batch's loss and metrics, phase `test` rows the test feed's, after the step they name.
class MetricsWriter {
public:
  /// Creates `path` (truncating it) and writes the header with `metricNames` as columns.
  static llvm::Expected<std::unique_ptr<MetricsWriter>>
  open(llvm::StringRef path, const std::vector<std::string> &metricNames);
  void writeStep(const StepReport &r);
  void writeEval(const StepReport &after, const EvalResult &eval);
  ~MetricsWriter();

private:
  explicit MetricsWriter(FILE *f) : f_(f) {}
  FILE *f_;
};

/// Where trainer `trainerId` of `trainers` writes its metrics when asked for `path`: `path`
/// itself for a lone trainer, else the id before the extension (`m.csv` -> `m.trainer1.csv`),
/// so trainers never share a file.
std::string metricsPathFor(llvm::StringRef path, int64_t trainerId, int64_t trainers);

} // namespace oar
