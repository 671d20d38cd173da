// Keeping the best evaluation and stopping early.
#include "train/best_model.h"

#include <cmath>
#include <optional>

#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

llvm::Expected<BestModel> BestModel::create(const proto::Program &main, BestModelOptions opts) {
  if (opts.patience < 0)
    return makeError("--early-stop {0} must be 0 (off) or a number of evaluations", opts.patience);
  if (opts.metric.empty())
    opts.metric = "loss";
  BestModel b(std::move(opts));
  const std::string &m = b.opts_.metric;
  if (m != "loss") {
    bool known = false;
    for (const std::string &name : main.metrics())
      known |= name == m || llvm::StringRef(name).startswith(m + ".") ||
               llvm::StringRef(name).startswith(m + "_");
    if (!known)
      return makeError("--keep-best={0}: the model reports no such metric (it has loss{1}{2})", m,
                       main.metrics_size() ? ", " : "",
                       llvm::join(main.metrics().begin(), main.metrics().end(), ", "));
    b.higherIsBetter_ = true; // auc and accuracy
  }
  return b;
}

/// The evaluation's value of `metric`: the loss, or the first metric named `metric` or starting
/// with it (auc's var is auc_0.tmp_0).
static std::optional<double> valueOf(const EvalResult &eval, llvm::StringRef metric) {
  if (metric == "loss")
    return eval.loss;
  for (const auto &[name, value] : eval.metrics)
    if (name == metric || llvm::StringRef(name).startswith(metric.str() + ".") ||
        llvm::StringRef(name).startswith(metric.str() + "_"))
      return value;
  return std::nullopt;
}

llvm::Expected<bool> BestModel::observe(const proto::Program &main, const StepReport &r,
                                        const EvalResult &eval, const Scope &scope) {
  std::optional<double> v = valueOf(eval, opts_.metric);
  if (!v)
    return makeError("the evaluation after step {0} has no {1}", r.step, opts_.metric);
  // A NaN or inf evaluation is never the best one.
  bool better = std::isfinite(*v) && (!seen_ || (higherIsBetter_ ? *v > best_ : *v < best_));
  if (better) {
    seen_ = true;
    best_ = *v, bestStep_ = r.step, bestEpoch_ = r.epoch, sinceBest_ = 0;
    if (opts_.save)
      if (llvm::Error err = opts_.save(scope))
        return addContext(std::move(err), "--keep-best");
    return false;
  }
  ++sinceBest_;
  bool stop = opts_.patience > 0 && sinceBest_ >= opts_.patience;
  if (stop)
    stoppedAfter_ = r.step;
  return stop;
}

std::string BestModel::summary() const {
  if (!seen_)
    return "";
  std::string s = llvm::formatv("best {0} {1:f6} after step {2} (epoch {3})", opts_.metric, best_,
                                bestStep_, bestEpoch_)
                      .str();
  if (!opts_.saveDir.empty())
    s += ", saved to " + opts_.saveDir;
  if (stoppedAfter_ >= 0)
    s += llvm::formatv("; stopped early after step {0}: {1} evaluations without a better {2}",
                       stoppedAfter_, sinceBest_, opts_.metric)
             .str();
  return s;
}

std::function<llvm::Expected<bool>(const StepReport &, const EvalResult &, const Scope &)>
BestModel::callback(const proto::Program &main) {
  return [this, &main](const StepReport &r, const EvalResult &eval, const Scope &scope) {
    return observe(main, r, eval, scope);
  };
}

} // namespace oar
