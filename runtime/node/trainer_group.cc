// Joining a job's trainers, their common start, and their agreement on the steps.
#include "runtime/node/trainer_group.h"

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/load_model.h"
#include "executor/device.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// Every rank's `value`, in rank order (an all-reduce of a vector only each rank's own slot fills).
llvm::Expected<std::vector<double>> gather(CollectiveGroup &group, double value) {
  std::vector<double> all(group.ranks(), 0.0);
  all[group.rank()] = value;
  if (llvm::Error err = group.allreduceSum(all.data(), all.size()))
    return std::move(err);
  return all;
}

/// The ranks whose value differs from rank 0's, named for an error.
std::string ranksUnlike(const std::vector<double> &all, const char *unit) {
  std::string out;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      out += llvm::formatv("{0}trainer {1} has {2} {3}", out.empty() ? "" : ", ", r,
                           static_cast<int64_t>(all[r]), unit);
  return out;
}

} // namespace

llvm::Expected<std::unique_ptr<CollectiveGroup>> joinTrainers(const proto::DistributeInfo &dist,
                                                              const Node &node) {
  int64_t id = node.cluster.trainerId;
  // Refused by name rather than half done: Gloo all-reduces host memory (a GPU param handed to it
  // would be read as a host pointer), the rendezvous would need trainer 0's own public key, and
  // evaluating a save needs no job.
  if (node.place.device != Device::Cpu)
    return makeError("trainer {0}: collective trainers run on the CPU (GPU trainers need NCCL, "
                     "not built yet)",
                     id);
  if (node.curve.enabled())
    return makeError("trainer {0}: collective jobs with CURVE keys are not built yet (the "
                     "rendezvous would need trainer 0's public key)",
                     id);
  if (node.options.evalOnly)
    return makeError("trainer {0}: --eval-only evaluates a save on one machine; collective and "
                     "hybrid jobs train",
                     id);
  if (node.rendezvous.empty())
    return makeError("trainer {0}: a collective job's trainers meet at trainer 0's address; none "
                     "was given",
                     id);
  CollectiveOptions c;
  c.rank = static_cast<int>(id), c.ranks = static_cast<int>(dist.trainers());
  c.rendezvous = node.rendezvous;
  c.bind = node.options.place.bind; // trainer 0 serves the rendezvous there, as a pserver serves
  c.host = node.collectiveHost;
  c.streams = node.options.trainer.collectiveStreams;
  c.onStuckWithPeerGone = node.onCollectiveStuck;
  // The same programs on every rank, and the same launch: another job's ranks are refused.
  // (and the same connections per pair: each stream joins with keys of its own).
  c.jobId = node.cluster.jobId + "/" + dist.plan_digest() + "/" + std::to_string(c.streams);
  c.heldPort = id == 0 ? node.heldPort : nullptr;
  c.timeout = node.options.timeouts.reply;
  c.shouldStop = node.shouldStop;
  c.log = node.log;
  return CollectiveGroup::join(std::move(c));
}

llvm::Error loadTrainerState(const proto::Program &main, const proto::Program &startup,
                             Scope &scope, const std::string &dir, std::optional<int64_t> step,
                             const std::string &who) {
  auto ckpt = CheckpointReader::open(dir, step);
  if (!ckpt)
    return addContext(ckpt.takeError(), who + " loading " + dir);
  auto loaded = loadSingleMachine(main, startup, scope, *ckpt);
  if (!loaded)
    return addContext(loaded.takeError(), who + " loading " + dir);
  return addContext(checkStateComplete(*loaded, *ckpt, /*training=*/true), who + " loading " + dir);
}

llvm::Error broadcastState(CollectiveGroup &group, const proto::Program &main, Scope &scope) {
  std::vector<std::string> names;
  for (const proto::Var &v : main.blocks(0).vars())
    if (v.persistable())
      names.push_back(v.name());
  llvm::sort(names);
  std::vector<double> bytes(names.size()), rank0(names.size());
  for (size_t i = 0; i < names.size(); ++i)
    if (const Tensor *t = scope.find(names[i]); t && t->initialized())
      bytes[i] = static_cast<double>(t->bytes());
  rank0 = bytes;
  if (llvm::Error err = group.broadcast(rank0.data(), rank0.size() * sizeof(double), 0))
    return addContext(std::move(err), "comparing the ranks' vars");
  for (size_t i = 0; i < names.size(); ++i)
    if (bytes[i] != rank0[i])
      return makeError("rank {0} holds {1} bytes of {2} but rank 0 holds {3}: the ranks' programs "
                       "or loads differ",
                       group.rank(), bytes[i], names[i], rank0[i]);
  for (size_t i = 0; i < names.size(); ++i) {
    if (bytes[i] == 0)
      continue;
    Tensor &t = scope.get(names[i]);
    if (llvm::Error err = group.broadcast(t.raw(), t.bytes(), 0))
      return addContext(std::move(err), "sending rank 0's " + names[i]);
  }
  return llvm::Error::success();
}

void agreeOnSteps(CollectiveGroup &group, TrainOptions &train) {
  train.agreeOnBatches = [&group](int64_t batches) -> llvm::Error {
    auto all = gather(group, static_cast<double>(batches));
    if (!all)
      return addContext(all.takeError(), "agreeing on the steps");
    if (std::string unlike = ranksUnlike(*all, "batches an epoch"); !unlike.empty())
      return makeError("trainer 0 has {0} batches an epoch but {1}: a collective job's trainers "
                       "take the same steps; give a row count that splits into equal batches "
                       "(a multiple of the trainers times the batch size)",
                       static_cast<int64_t>((*all)[0]), unlike);
    return llvm::Error::success();
  };
  train.agreeOnStep = [&group](int64_t step, bool hasBatch) -> llvm::Expected<bool> {
    auto all = gather(group, hasBatch ? 1.0 : 0.0);
    if (!all)
      return addContext(all.takeError(), llvm::formatv("agreeing on step {0}", step).str());
    std::vector<std::string> without;
    for (size_t r = 0; r < all->size(); ++r)
      if ((*all)[r] == 0)
        without.push_back(std::to_string(r));
    if (!without.empty() && without.size() < all->size())
      return makeError("step {0}: trainer(s) {1} have no more batches but the others do: a "
                       "collective job's trainers take the same steps; give each trainer's files "
                       "the same number of batches",
                       step, llvm::join(without, ", "));
    return hasBatch;
  };
}

void agreeOnEarlyStop(CollectiveGroup &group, TrainOptions &train, int64_t rank) {
  train.evaluates = rank == 0;
  // Each trainer sends 2 (step + 1) + its wish: trainers that reach an evaluation at different
  // steps (epochs of unequal streamed shards) are an error, not a vote paired with another's.
  train.agreeOnStop = [&group](int64_t step, bool stop) -> llvm::Expected<bool> {
    auto all = gather(group, 2.0 * double(step + 1) + (stop ? 1.0 : 0.0));
    if (!all)
      return addContext(all.takeError(),
                        llvm::formatv("agreeing to stop after step {0}", step).str());
    for (size_t r = 0; r < all->size(); ++r)
      if (int64_t((*all)[r]) / 2 - 1 != step)
        return makeError("after step {0}: trainer {1} is not at an evaluation; early stopping "
                         "needs every trainer's evaluations at the same steps (equal shards, or "
                         "--eval-every N steps)",
                         step, r);
    return int64_t((*all)[0]) % 2 == 1;
  };
}

} // namespace oar::runtime
