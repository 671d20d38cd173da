// The steps a caller drives.
#include "runtime/node/driven_steps.h"

#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

class Steps final : public TrainerSteps {
public:
  Steps(Executor &exec, const proto::Program &main, Scope &scope, const TrainOptions &opts,
        int64_t trainerId)
      : exec_(exec), main_(main), scope_(scope), opts_(opts), trainerId_(trainerId) {}

  const proto::Program &main() const override { return main_; }
  Scope &scope() override { return scope_; }
  int64_t trainerId() const override { return trainerId_; }

  llvm::Error step() override {
    int64_t step = opts_.startStep + static_cast<int64_t>(reports.size());
    if (opts_.shouldStop && opts_.shouldStop())
      return makeError("stopped by signal before step {0}", step);
    if (llvm::Error err = exec_.run(main_, scope_))
      return addContext(std::move(err), llvm::formatv("step {0}", step).str());
    StepReport r;
    r.step = step;
    if (const Tensor *loss = main_.loss().empty() ? nullptr : scope_.find(main_.loss());
        loss && loss->initialized() && loss->numel() > 0 && loss->dtype() == proto::F32) {
      Tensor host = onHost(*loss);
      r.loss = host.data<float>()[0];
    }
    reports.push_back(r);
    if (opts_.afterStep)
      if (llvm::Error err = opts_.afterStep(r, scope_))
        return addContext(std::move(err), llvm::formatv("after step {0}", step).str());
    return llvm::Error::success();
  }

  std::vector<StepReport> reports;

private:
  Executor &exec_;
  const proto::Program &main_;
  Scope &scope_;
  const TrainOptions &opts_;
  int64_t trainerId_;
};

} // namespace

llvm::Expected<DrivenSteps> driveSteps(const StepDriver &driver, Executor &exec,
                                       const proto::Program &main, Scope &scope,
                                       const TrainOptions &opts, int64_t trainerId) {
  Steps steps(exec, main, scope, opts, trainerId);
  DrivenSteps result;
  if (llvm::Error err = driver(steps).moveInto(result.saveDir))
    return std::move(err);
  result.reports = std::move(steps.reports);
  return result;
}

} // namespace oar::runtime
