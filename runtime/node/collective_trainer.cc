// A trainer of a collective job: no pservers; the ranks start from rank 0's params, average
// their gradients every step (c_allreduce_avg), and each runs the optimizer itself.
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/load_model.h"
#include "executor/device.h"
#include "runtime/collective/collective_group.h"
#include "runtime/node/node.h"
#include "runtime/node/run_env.h"
#include "runtime/node/save_lock.h"
#include "support/error.h"
#include "support/signals.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

/// Every persistable var `main` declares (params and optimizer state), copied from rank 0 to
/// every rank, in name order: the ranks start from the same bits however each initialised them.
/// The list comes from the program, the same on every rank; each rank first checks that it holds
/// each var with rank 0's byte count, so no broadcast is ever of two sizes (Gloo would abort).
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

/// Each step is an all-reduce among the ranks: a rank that took one more than the others would
/// wait in it for ranks that have ended. So they agree before training on their batches an epoch,
/// or, where a streamed feed cannot tell ahead, on each step.
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

} // namespace

llvm::Error runCollectiveTrainer(const NodePrograms &progs, const NodeOptions &opts,
                                 std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  int64_t id = opts.cluster.trainerId, ranks = dist.trainers();
  if (id < 0 || id >= ranks)
    return makeError("trainer id {0} is out of range for {1} trainers", id, ranks);
  // Refused by name rather than half done: Gloo all-reduces host memory (a GPU param handed to it
  // would be read as a host pointer), the rendezvous would need trainer 0's own public key, and
  // evaluating a save needs no job.
  if (opts.place.device != Device::Cpu)
    return makeError("trainer {0}: collective trainers run on the CPU (GPU trainers need NCCL, "
                     "not built yet)",
                     id);
  if (opts.curve.enabled())
    return makeError("trainer {0}: collective jobs with CURVE keys are not built yet (the "
                     "rendezvous would need trainer 0's public key)",
                     id);
  if (opts.evalOnly)
    return makeError("trainer {0}: --eval-only evaluates a save on one machine; a collective job "
                     "trains",
                     id);
  if (opts.rendezvous.empty())
    return makeError("trainer {0}: a collective job's trainers meet at trainer 0's address; none "
                     "was given",
                     id);
  auto saveLock =
      lockSaveDir(id == 0 ? opts.saveDir : "", saveLockJob(opts.cluster.jobId, dist.plan_digest()));
  if (!saveLock)
    return saveLock.takeError();
  CollectiveOptions c;
  c.rank = static_cast<int>(id), c.ranks = static_cast<int>(ranks);
  c.rendezvous = opts.rendezvous;
  c.host = opts.collectiveHost;
  // The same programs on every rank, and the same launch: another job's ranks are refused.
  c.jobId = opts.cluster.jobId + "/" + dist.plan_digest();
  c.heldPort = id == 0 ? opts.heldPort : nullptr;
  c.timeout = opts.timeouts.reply;
  c.shouldStop = stopRequested;
  c.log = opts.log;
  auto group = CollectiveGroup::join(std::move(c));
  if (!group)
    return group.takeError();
  std::string who = "trainer " + std::to_string(id);
  if (!opts.computeThreads.empty() && opts.log)
    opts.log(who + ": " + opts.computeThreads);
  RunEnv env;
  env.group = group->get();
  env.program = &progs.main;
  if (llvm::Error err = usePlace(opts.place))
    return addContext(std::move(err), who);
  Executor exec(opts.place.device);
  exec.setEnv(&env);
  Scope scope;
  if (llvm::Error err = exec.run(progs.startup, scope))
    return addContext(std::move(err), who + " startup");
  if (id == 0 && !opts.loadDir.empty()) {
    auto ckpt = CheckpointReader::open(opts.loadDir);
    if (!ckpt)
      return ckpt.takeError();
    auto loaded = loadSingleMachine(progs.main, progs.startup, scope, *ckpt);
    if (!loaded)
      return addContext(loaded.takeError(), who + " loading " + opts.loadDir);
    if (llvm::Error err = checkStateComplete(*loaded, *ckpt, /*training=*/true))
      return addContext(std::move(err), who + " loading " + opts.loadDir);
  }
  if (llvm::Error err = broadcastState(**group, progs.main, scope))
    return err;
  TrainOptions train = opts.train;
  if (id != 0) // trainer 0 scores the model
    train.evalEverySteps = 0, train.evalEveryEpoch = false;
  train.trainerId = id; // the data shard
  train.trainers = ranks;
  train.onStep = opts.onStep;
  train.shouldStop = stopRequested;
  agreeOnSteps(**group, train);
  auto reports = trainLoop(exec, progs.main, scope, train);
  if (!reports) // the other ranks' next all-reduce fails: they end too
    return addContext(reports.takeError(), who);
  if (id == 0 && progs.main.has_test_feed() && progs.main.test_feed().columns_size() > 0) {
    auto eval = evaluate(exec, progs.main, scope, progs.main.test_feed());
    if (!eval)
      return eval.takeError();
    testResult = *eval;
  }
  if (id == 0 && !opts.saveDir.empty())
    return savePersistables(progs.main, scope, opts.saveDir, /*parametersOnly=*/true);
  return llvm::Error::success();
}

} // namespace oar::runtime
