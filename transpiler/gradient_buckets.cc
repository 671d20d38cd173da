// Cutting the dense gradients into buckets and placing each bucket's all-reduce.
#include "transpiler/gradient_buckets.h"

#include <algorithm>
#include <map>

#include "support/error.h"
#include "transpiler/collective_program.h"
#include "llvm/ADT/StringMap.h"

namespace oar {

namespace {

/// Bytes of `v`; a dim not known ahead (-1) counts as a full bucket, so the grad ends one.
int64_t bytesOf(const proto::Var &v, int64_t full) {
  int64_t n = 1;
  for (int64_t d : v.type().dims()) {
    if (d < 0)
      return full;
    n *= d;
  }
  return n * static_cast<int64_t>(dtypeSize(v.type().dtype()));
}

bool hasSubBlock(const proto::Op &op) {
  for (const proto::Attr &a : op.attrs())
    if (a.value_case() == proto::Attr::kBlock)
      return true;
  return false;
}

proto::Op bucketOp(llvm::StringRef type, const std::vector<std::string> &grads, int64_t trainers,
                   int64_t bucket, bool writes) {
  SlotMap outputs;
  if (writes)
    outputs.emplace_back("Out", grads);
  return makeOp(type, {{"X", grads}}, outputs,
                {{"bucket", AttrValue(bucket)}, {"ranks", AttrValue(trainers)}}, proto::DIST);
}

} // namespace

llvm::Expected<GradientAllreduce> planGradientAllreduce(const proto::Block &block,
                                                        const std::vector<std::string> &grads,
                                                        int firstOptimizer,
                                                        const DistributeConfig &config) {
  GradientAllreduce plan;
  plan.before.resize(static_cast<size_t>(block.ops_size()) + 1);
  if (grads.empty() || firstOptimizer < 0)
    return plan;
  if (config.bucketBytes == 0) { // one all-reduce once backward is done
    plan.before[firstOptimizer].push_back(allreduceAvgOp(grads, config.trainers));
    plan.buckets = 1;
    return plan;
  }
  llvm::StringMap<const proto::Var *> vars;
  for (const proto::Var &v : block.vars())
    vars[v.name()] = &v;
  // The last op before the optimizer that reads or writes each grad: its all-reduce may start
  // after it and nothing else touches the grad until the wait. An op with a sub-block may touch
  // anything: no bucket starts before it ends.
  llvm::StringMap<int> lastUse;
  int floor = -1;
  for (int i = 0; i < firstOptimizer; ++i) {
    const proto::Op &op = block.ops(i);
    if (hasSubBlock(op))
      floor = i;
    for (const auto *slots : {&op.inputs(), &op.outputs()})
      for (const proto::Slot &s : *slots)
        for (const std::string &n : s.names())
          lastUse[n] = i;
  }
  struct Grad {
    std::string name;
    int lastUse;
    int64_t bytes;
    proto::DType dtype;
  };
  std::vector<Grad> order;
  for (const std::string &g : grads) {
    const proto::Var *v = vars.lookup(g);
    if (!v)
      return makeError("gradient {0} is not declared in the block", g);
    auto used = lastUse.find(g);
    // A grad nothing touched before the optimizer starts with the last bucket.
    int last = used == lastUse.end() ? firstOptimizer - 1 : used->second;
    order.push_back({g, std::max(floor, last), bytesOf(*v, config.bucketBytes), v->type().dtype()});
  }
  std::stable_sort(order.begin(), order.end(),
                   [](const Grad &a, const Grad &b) { return a.lastUse < b.lastUse; });
  // Each dtype fills its own bucket: one all-reduce sums one dtype.
  struct Open {
    std::vector<std::string> grads;
    int64_t bytes = 0;
    int lastUse = -1; ///< of its grads: where its all-reduce can start
  };
  std::map<int, Open> open; // by dtype
  std::vector<std::vector<std::string>> started;
  // A bucket backward is done with only at its very end has nothing to overlap: it is summed on
  // the trainer's own thread after the others (one c_allreduce_avg a dtype), which saves the
  // hand-over to the collective's thread.
  std::map<int, std::vector<std::string>> atEnd; // by dtype
  int buckets = 0;
  auto close = [&](Open &b, int dtype) {
    ++buckets;
    if (b.lastUse + 1 >= firstOptimizer) {
      auto &grads = atEnd[dtype];
      grads.insert(grads.end(), b.grads.begin(), b.grads.end());
    } else {
      int64_t id = static_cast<int64_t>(started.size());
      plan.before[static_cast<size_t>(b.lastUse) + 1].push_back(
          bucketOp("c_allreduce_start", b.grads, config.trainers, id, false));
      started.push_back(std::move(b.grads));
    }
    b = Open();
  };
  for (const Grad &g : order) {
    Open &b = open[g.dtype];
    b.grads.push_back(g.name);
    b.bytes += g.bytes;
    b.lastUse = g.lastUse; // the grads come in the order of their last use
    int64_t cap = buckets == 0 ? config.firstBucketBytes : config.bucketBytes;
    if (b.bytes >= cap)
      close(b, g.dtype);
  }
  for (auto &[dtype, b] : open) // what is left starts once backward is done with it
    if (!b.grads.empty())
      close(b, dtype);
  for (size_t id = 0; id < started.size(); ++id)
    plan.before[firstOptimizer].push_back(
        bucketOp("c_allreduce_wait", started[id], config.trainers, static_cast<int64_t>(id), true));
  for (auto &[dtype, grads] : atEnd) // after the waits: one collective at a time
    plan.before[firstOptimizer].push_back(allreduceAvgOp(grads, config.trainers));
  plan.buckets = buckets;
  return plan;
}

} // namespace oar
