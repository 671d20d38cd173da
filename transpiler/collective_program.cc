// The collective pass: a trainer program with no pservers, whose dense gradients are averaged
// over the trainers by all-reduce (in buckets, gradient_buckets.h) before the optimizer ops,
// which every trainer runs itself.
#include "transpiler/collective_program.h"

#include "ir/job_hash.h"
#include "ir/node_role.h"
#include "support/error.h"
#include "transpiler/arena_blocks.h"
#include "transpiler/distributed_table_pass.h"
#include "transpiler/gradient_buckets.h"
#include "transpiler/passes.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

llvm::Error denseGradients(const proto::Block &block, std::vector<std::string> &grads,
                           int &firstOptimizer, bool noneIsError) {
  llvm::StringMap<const proto::Var *> vars;
  for (const proto::Var &v : block.vars())
    vars[v.name()] = &v;
  llvm::StringSet<> seen;
  firstOptimizer = -1;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    if (isDistributedLookup(op))
      return makeError("op #{0} (lookup_table) reads a distributed table (is_distributed), which "
                       "lives on pservers: collective mode has none",
                       i);
    if (op.role() != proto::OPTIMIZE)
      continue;
    if (firstOptimizer < 0)
      firstOptimizer = i;
    auto paramAndGrad = firstInputs(op, i, {"Param", "Grad"});
    if (!paramAndGrad)
      return paramAndGrad.takeError();
    const std::string &grad = (*paramAndGrad)[1];
    const proto::Var *v = vars.lookup(grad);
    if (!v)
      return makeError("op #{0} ({1}) reads gradient {2}, which is not declared", i, op.type(),
                       grad);
    if (v->kind() == proto::SELECTED_ROWS)
      return makeError("op #{0} ({1}): the gradient {2} of {3} is selected rows (a sparse "
                       "lookup); collective mode all-reduces dense gradients only",
                       i, op.type(), grad, (*paramAndGrad)[0]);
    if (seen.insert(grad).second)
      grads.push_back(grad);
  }
  // Clipping by global norm sees the averaged gradient, as one machine with the whole batch does.
  for (int i = 0; i < firstOptimizer; ++i)
    if (block.ops(i).type() == "clip_by_global_norm") {
      firstOptimizer = i;
      break;
    }
  if (grads.empty() && noneIsError)
    return makeError("the program has no optimizer ops, so there is nothing to distribute; build "
                     "it with an optimizer's minimize()");
  return llvm::Error::success();
}

proto::Op allreduceAvgOp(const std::vector<std::string> &grads, int64_t trainers) {
  return makeOp("c_allreduce_avg", {{"X", grads}}, {{"Out", grads}},
                {{"ranks", AttrValue(trainers)}}, proto::DIST);
}

namespace {

void setCollectiveInfo(proto::Program &prog, const DistributeConfig &config, uint64_t jobHash) {
  proto::DistributeInfo &d = *prog.mutable_dist();
  d.set_mode(modeName(Mode::Collective).str());
  d.set_trainers(config.trainers);
  d.set_role(roleName(Role::Trainer).str());
  // Every rank's programs hash alike: the rendezvous compares this to keep other jobs out.
  // The buckets too: ranks whose buckets differ would pair all-reduces of different sizes.
  d.set_plan_digest(llvm::formatv("collective-{0:x16}-{1}-buckets-{2}-{3}", jobHash,
                                  config.trainers, config.firstBucketBytes, config.bucketBytes)
                        .str());
}

} // namespace

llvm::Error collectivePass(TranspileState &state) {
  if (state.config.mode != Mode::Collective)
    return llvm::Error::success();
  if (llvm::Error err = state.config.validate())
    return err;
  if (state.main.blocks_size() == 0)
    return makeError("the main program has no blocks");
  std::vector<std::string> grads;
  int firstOptimizer = -1;
  if (llvm::Error err = denseGradients(state.main.blocks(0), grads, firstOptimizer, true))
    return err;
  state.jobHash = jobHash(state.main, state.startup);
  TranspileResult &r = state.result;
  r.plan.config = state.config;
  r.arenas_.push_back(newProgramArena());
  auto *arena = r.arenas_.back().get();
  r.trainer_ = google::protobuf::Arena::CreateMessage<proto::Program>(arena);
  r.trainerStartup_ = google::protobuf::Arena::CreateMessage<proto::Program>(arena);
  *r.trainer_ = state.main;
  *r.trainerStartup_ = state.startup;
  proto::Block &block = *r.trainer_->mutable_blocks(0);
  auto allreduce = planGradientAllreduce(block, grads, firstOptimizer, state.config);
  if (!allreduce)
    return allreduce.takeError();
  google::protobuf::RepeatedPtrField<proto::Op> ops;
  for (int i = 0; i <= block.ops_size(); ++i) {
    for (proto::Op &op : allreduce->before[i])
      *ops.Add() = std::move(op);
    if (i < block.ops_size())
      *ops.Add() = std::move(*block.mutable_ops(i));
  }
  block.mutable_ops()->Swap(&ops);
  setCollectiveInfo(*r.trainer_, state.config, state.jobHash);
  setCollectiveInfo(*r.trainerStartup_, state.config, state.jobHash);
  return llvm::Error::success();
}

} // namespace oar
