// What a training node shows while it trains: progress, the metrics CSV, its evaluations and a
// summary, written to the stream its caller gives.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "train/metrics_writer.h"
#include "train/progress.h"
#include "llvm/Support/raw_ostream.h"

namespace oar::runtime {

class StepOutput {
public:
  /// Shows trainer `trainerId` of `trainers` on `out`; with `metricsPath`, also writes its CSV
  /// (metricsPathFor). An error names the CSV it cannot write.
  static llvm::Expected<std::unique_ptr<StepOutput>>
  open(llvm::raw_ostream &out, const proto::Program &main, int64_t trainerId, int64_t trainers,
       llvm::StringRef metricsPath, int64_t logEvery);

  /// TrainOptions::onStep and onEval.
  std::function<void(const StepReport &)> stepCallback();
  std::function<void(const StepReport &, const EvalResult &)> evalCallback();
  /// Ends the progress display and prints "<who>trained N steps: first loss .., last loss ..
  /// (R samples/s)", the rate over the steps after the first (which warms caches and
  /// connections).
  void summary(const std::string &who);

private:
  StepOutput(llvm::raw_ostream &out, int64_t logEvery) : out_(out), progress_(out, "", logEvery) {}
  llvm::raw_ostream &out_;
  ProgressPrinter progress_;
  std::unique_ptr<MetricsWriter> metrics_;
  int64_t steps_ = 0, rowsAfterFirst_ = 0;
  double firstLoss_ = 0, lastLoss_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// "test: R rows, loss L, <metric> V, ...".
void printEval(llvm::raw_ostream &out, const EvalResult &eval);

} // namespace oar::runtime
