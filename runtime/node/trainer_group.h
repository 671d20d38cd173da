// The trainers of a collective or hybrid job as a group: joining it, starting every trainer from
// trainer 0's state, and agreeing on the step count.
#pragma once

#include <memory>

#include "runtime/collective/collective_group.h"
#include "runtime/node/node.h"

namespace oar::runtime {

/// Joins the job's trainers at node.rendezvous (trainer 0 serves it on its held port). Errors
/// (with the reason) for what collective trainers cannot do yet: a GPU, CURVE keys, --eval-only.
llvm::Expected<std::unique_ptr<CollectiveGroup>> joinTrainers(const proto::DistributeInfo &dist,
                                                              const Node &node);

/// Every persistable var `main` declares that this trainer holds (params and optimizer state),
/// copied from trainer 0 to every trainer, in name order: they start from the same bits however
/// each initialised them. The list comes from the program, the same on every trainer; each first
/// checks that it holds each var with trainer 0's byte count, so no broadcast is ever of two
/// sizes (Gloo would abort). Vars no trainer holds (a hybrid job's tables) are skipped.
llvm::Error broadcastState(CollectiveGroup &group, const proto::Program &main, Scope &scope);

/// --load on trainer 0 of a collective or hybrid job: the vars of `main` it holds (the dense
/// params and their optimizer state), from a checkpoint of any layout, before broadcastState
/// gives them to the others. A hybrid job's tables are not among them: its pservers load those.
/// Errors name the var missing and the directory.
llvm::Error loadTrainerState(const proto::Program &main, const proto::Program &startup,
                             Scope &scope, const std::string &dir, std::optional<int64_t> step,
                             const std::string &who);

/// Each step is an all-reduce among the trainers: one that took a step more than the others
/// would wait in it for trainers that have ended. So they agree before training on their batches
/// an epoch, or, where a streamed feed cannot tell ahead, on each step (TrainOptions'
/// agreeOnBatches and agreeOnStep); different counts are an error naming each trainer's.
void agreeOnSteps(CollectiveGroup &group, TrainOptions &train);

/// Early stopping in a collective job: trainer 0 (`rank` 0) evaluates and decides, and every
/// trainer learns its decision at each evaluation's step, so all stop at the same step (their
/// own evaluations could differ in a last bit: a GEMM's sums follow its thread count).
void agreeOnEarlyStop(CollectiveGroup &group, TrainOptions &train, int64_t rank);

} // namespace oar::runtime
