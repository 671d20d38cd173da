// One machine's training checkpoints.
#include "checkpoint/training_checkpoints.h"

#include "ir/job_hash.h"
#include "support/error.h"

#include "llvm/Support/FormatVariadic.h"
#include <memory>

namespace oar {

/// The job's hash without the number of epochs, which only says where training stops: a run
/// of one epoch, started again for two, goes on into the second (1 + 1 epochs are 2).
static std::string digestOf(const proto::Program &main, const proto::Program &startup) {
  proto::Program hashed = main;
  hashed.mutable_train_feed()->clear_epochs();
  return llvm::formatv("{0:x16}", jobHash(hashed, startup)).str();
}

TrainingCheckpoints::TrainingCheckpoints(std::string dir, const proto::Program &main,
                                         const proto::Program &startup, int64_t every, int keep)
    : steps_(std::move(dir), digestOf(main, startup), std::max(keep, 1)), main_(main),
      every_(every) {}

llvm::Expected<int64_t>
TrainingCheckpoints::resume(Scope &scope, const std::function<void(const std::string &)> &log) {
  std::optional<int64_t> step = steps_.latest();
  if (!step)
    return 0;
  if (llvm::Error err = verifyCheckpointFiles(steps_.pathOf(*step)))
    return std::move(err);
  auto loaded = loadPersistables(main_, scope, steps_.pathOf(*step));
  if (!loaded)
    return loaded.takeError();
  resumedAt_ = *step;
  std::string epoch;
  if (auto m = steps_.manifest(*step); m && m->fields.count("epoch"))
    epoch = " (epoch " + m->fields.at("epoch") + ")";
  if (log)
    log(llvm::formatv("resumed from checkpoint {0}{1}: training goes on at step {2}",
                      steps_.pathOf(*step), epoch, *step + 1)
            .str());
  return *step;
}

llvm::Error TrainingCheckpoints::write(int64_t stepsDone, int64_t epoch, const Scope &scope) {
  auto copy = std::make_shared<Scope>(copyPersistables(main_, scope));
  std::map<std::string, std::string> fields{{"epoch", std::to_string(epoch)},
                                            {"step", std::to_string(stepsDone)}};
  return writer_.start([this, copy, stepsDone, fields] {
    return steps_.write(
        stepsDone, [&](const std::string &dir) { return savePersistables(main_, *copy, dir); },
        fields);
  });
}

llvm::Error TrainingCheckpoints::afterStep(const StepReport &r, const Scope &scope) {
  if (every_ <= 0 || (r.step + 1) % every_ != 0)
    return llvm::Error::success();
  return write(r.step + 1, r.epoch, scope);
}

llvm::Error TrainingCheckpoints::finish(const std::vector<StepReport> &reports,
                                        const Scope &scope) {
  writer_.join();
  if (!reports.empty() && steps_.latest() != reports.back().step + 1)
    if (llvm::Error err = write(reports.back().step + 1, reports.back().epoch, scope))
      return err;
  return writer_.wait();
}

} // namespace oar
