// A training node's progress, metrics and summary.
#include "runtime/node/step_output.h"

#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

void printEval(llvm::raw_ostream &out, const EvalResult &eval) {
  out << llvm::formatv("test: {0} rows, loss {1:f6}", eval.rows, eval.loss);
  for (const auto &[name, value] : eval.metrics)
    out << llvm::formatv(", {0} {1:f6}", name, value);
  out << "\n";
}

llvm::Expected<std::unique_ptr<StepOutput>>
StepOutput::open(llvm::raw_ostream &out, const proto::Program &main, int64_t trainerId,
                 int64_t trainers, llvm::StringRef metricsPath, int64_t logEvery) {
  std::unique_ptr<StepOutput> o(new StepOutput(out, logEvery));
  if (!metricsPath.empty()) {
    std::vector<std::string> names(main.metrics().begin(), main.metrics().end());
    auto metrics = MetricsWriter::open(metricsPathFor(metricsPath, trainerId, trainers), names);
    if (!metrics)
      return metrics.takeError();
    o->metrics_ = std::move(*metrics);
  }
  return o;
}

std::function<void(const StepReport &)> StepOutput::stepCallback() {
  return [this](const StepReport &r) {
    progress_.update(r);
    if (metrics_)
      metrics_->writeStep(r);
    if (steps_++ == 0) {
      firstLoss_ = r.loss;
      start_ = std::chrono::steady_clock::now();
    }
    lastLoss_ = r.loss;
    rowsAfterFirst_ += steps_ > 1 ? r.rows : 0;
  };
}

std::function<void(const StepReport &, const EvalResult &)> StepOutput::evalCallback() {
  return [this](const StepReport &r, const EvalResult &eval) {
    out_ << llvm::formatv("after step {0}: ", r.step);
    printEval(out_, eval);
    if (metrics_)
      metrics_->writeEval(r, eval);
  };
}

void StepOutput::summary(const std::string &who) {
  progress_.finish();
  if (steps_ == 0)
    return;
  out_ << llvm::formatv("{0}trained {1} steps: first loss {2:f6}, last loss {3:f6}", who, steps_,
                        firstLoss_, lastLoss_);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (steps_ > 1 && secs > 0)
    out_ << llvm::formatv(" ({0:f0} samples/s)", rowsAfterFirst_ / secs);
  out_ << "\n";
}

} // namespace oar::runtime
