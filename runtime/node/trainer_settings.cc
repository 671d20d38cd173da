// A trainer's device, evaluations and best model from its settings.
#include "runtime/node/trainer_settings.h"

#include "checkpoint/save_model.h"
#include "support/error.h"

namespace oar::runtime {

llvm::Expected<Place> computePlace(const TrainerOptions &o, const proto::Program &main,
                                   llvm::StringRef what) {
  std::string text = !o.device.empty() ? o.device : main.device();
  if (text.empty())
    text = "cpu";
  auto place = parsePlace(text, !o.device.empty() ? llvm::StringRef("--device") : what);
  if (!place)
    return place.takeError();
  if (llvm::Error err = usePlace(*place))
    return err;
  return *place;
}

llvm::Error setEvaluations(const TrainerOptions &o, TrainOptions &train) {
  train.stopOnNonFinite = !o.allowNonFinite;
  if (o.evalEvery.empty())
    return llvm::Error::success();
  if (o.evalEvery == "epoch")
    train.evalEveryEpoch = true;
  else if (llvm::StringRef(o.evalEvery).getAsInteger(10, train.evalEverySteps) ||
           train.evalEverySteps <= 0)
    return makeError("--eval-every \"{0}\" must be a positive step count or epoch", o.evalEvery);
  return llvm::Error::success();
}

llvm::Expected<std::optional<BestModel>>
bestModelOf(const TrainerOptions &o, const proto::Program &main, const std::string &saveDir,
            bool saves, std::shared_ptr<std::function<llvm::Error()>> pserverPart) {
  if (o.keepBest.empty() && o.earlyStop == 0)
    return std::nullopt;
  if (o.evalEvery.empty())
    return makeError("--keep-best and --early-stop act on evaluations: give --eval-every (epoch "
                     "or N steps) and a test feed");
  BestModelOptions b;
  b.metric = o.keepBest, b.patience = o.earlyStop;
  if (!o.keepBest.empty()) {
    if (saveDir.empty())
      return makeError("--keep-best saves the best evaluation next to --save's model (in "
                       "SAVE/best): give --save DIR");
    b.saveDir = saveDir + "/best";
    if (saves && !pserverPart)
      b.save = [&main, dir = b.saveDir](const Scope &s) { return saveSingleMachine(main, s, dir); };
    if (saves && pserverPart)
      b.save = [&main, dir = b.saveDir, pserverPart](const Scope &s) -> llvm::Error {
        // The tables first: the dense files then mark a best save whose parts are all there.
        if (*pserverPart)
          if (llvm::Error err = (*pserverPart)())
            return err;
        return savePersistables(main, s, dir, /*parametersOnly=*/true);
      };
  }
  auto best = BestModel::create(main, b);
  if (!best)
    return best.takeError();
  return std::optional<BestModel>(std::move(*best));
}

} // namespace oar::runtime
