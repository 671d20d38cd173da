// A trainer's settings (TrainerOptions) made into what training takes: its device, its
// evaluations, its best model. The same for one machine and for a trainer of a job.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "executor/device.h"
#include "runtime/node/node_options.h"
#include "train/best_model.h"
#include "train/training_loop.h"

namespace oar::runtime {

/// --device, else the program's, else the CPU, checked usable here (built with CUDA, a GPU of
/// that index visible). `what` names the program in errors.
llvm::Expected<Place> computePlace(const TrainerOptions &o, const proto::Program &main,
                                   llvm::StringRef what);

/// --eval-every and --allow-nonfinite as TrainOptions fields of `train`.
llvm::Error setEvaluations(const TrainerOptions &o, TrainOptions &train);

/// The --keep-best and --early-stop setup of trainer 0 (`saves`; the others only follow its
/// decisions), saving under `saveDir`/best; nullopt without them. With `pserverPart`, a PS or
/// hybrid job's: trainer 0 writes its dense params there and then calls *pserverPart (set once
/// the pservers are connected) for the tables' rows; without, one machine's or a collective
/// trainer's whole model.
llvm::Expected<std::optional<BestModel>>
bestModelOf(const TrainerOptions &o, const proto::Program &main, const std::string &saveDir,
            bool saves, std::shared_ptr<std::function<llvm::Error()>> pserverPart = nullptr);

} // namespace oar::runtime
