// Slicing parameters into blocks and placing the blocks on endpoints.
#include "transpiler/plan.h"
#include "transpiler/distributed_table_pass.h"

#include "ir/names.h"
#include "support/error.h"
#include "support/hash.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

llvm::Expected<std::vector<std::string>> firstInputs(const proto::Op &op, size_t index,
                                                     llvm::ArrayRef<const char *> slots) {
  std::vector<std::string> names;
  for (const char *slot : slots) {
    const std::string *name = slotName(findInputSlot(op, slot));
    if (!name)
      return makeError("op #{0} ({1}) has no {2} input", index, op.type(), slot);
    names.push_back(*name);
  }
  return names;
}

llvm::Error undeclaredInput(const proto::Op &op, size_t index, llvm::StringRef slot,
                            llvm::StringRef var) {
  return makeError("op #{0} ({1}) reads {2} as its {3}, which is not declared", index, op.type(),
                   var, slot);
}

int64_t ParamPlan::rowWidth() const {
  int64_t w = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    w *= dims[i];
  return w;
}

std::vector<int64_t> ParamPlan::blockRows() const {
  std::vector<int64_t> rows;
  rows.reserve(blocks.size());
  for (const VarBlock &b : blocks)
    rows.push_back(b.dims[0]);
  return rows;
}

std::vector<int64_t> sliceSizes(llvm::ArrayRef<int64_t> dims, int64_t numPservers,
                                int64_t minBlockSize) {
  int64_t numel = numElements(dims);
  int64_t maxSplit = std::max<int64_t>(1, numel / minBlockSize);
  int64_t split = std::min(numPservers, maxSplit);
  int64_t block = (numel + split - 1) / split;
  if (dims.size() >= 2) { // whole rows
    int64_t width = numel / std::max<int64_t>(dims[0], 1);
    if (width > 0)
      block = (block + width - 1) / width * width;
  }
  split = block > 0 ? (numel + block - 1) / block : 1;
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < split; ++i)
    sizes.push_back(std::min(block, numel - i * block));
  return sizes;
}

namespace {

/// Slots of each known optimizer: param-shaped state, per-param scalars, shared inputs.
struct OptimizerSlots {
  const char *type;
  std::vector<const char *> paramShaped, perParam, shared;
};
const OptimizerSlots kOptimizers[] = {
    {"sgd", {}, {}, {"LearningRate"}},
    {"momentum", {"Velocity"}, {}, {"LearningRate"}},
    {"adam", {"Moment1", "Moment2"}, {"Beta1Pow", "Beta2Pow"}, {"LearningRate"}},
    {"adamw", {"Moment1", "Moment2"}, {"Beta1Pow", "Beta2Pow"}, {"LearningRate"}},
    {"adagrad", {"Moment"}, {}, {"LearningRate"}},
};

llvm::Expected<OptimizerInfo> readOptimizer(const proto::Op &op, size_t index) {
  const OptimizerSlots *known =
      llvm::find_if(kOptimizers, [&](const OptimizerSlots &o) { return op.type() == o.type; });
  if (known == std::end(kOptimizers))
    return makeError("op #{0} ({1}) updates a parameter but the transpiler does not know this "
                     "optimizer (known: sgd, momentum, adam, adamw, adagrad)",
                     index, op.type());
  OptimizerInfo info;
  info.opIndex = index;
  info.type = op.type();
  auto collect = [&](const std::vector<const char *> &slots,
                     std::vector<std::pair<std::string, std::string>> &out) -> llvm::Error {
    auto names = firstInputs(op, index, slots);
    if (!names)
      return names.takeError();
    for (size_t k = 0; k < slots.size(); ++k)
      out.emplace_back(slots[k], std::move((*names)[k]));
    return llvm::Error::success();
  };
  if (llvm::Error err = collect(known->paramShaped, info.paramShaped))
    return err;
  if (llvm::Error err = collect(known->perParam, info.perParam))
    return err;
  // A schedule's update counter: each block of the param counts its own updates.
  if (!opInputs(op, "Step").empty())
    if (llvm::Error err = collect({"Step"}, info.perParam))
      return err;
  if (llvm::Error err = collect(known->shared, info.shared))
    return err;
  return info;
}

} // namespace

llvm::Expected<DistributePlan> makePlan(const proto::Program &main, const DistributeConfig &config,
                                        std::vector<TablePlan> tables) {
  if (llvm::Error err = config.validate())
    return err;
  DistributePlan plan;
  plan.config = config;
  plan.tables = std::move(tables);
  const proto::Block &block = main.blocks(0);
  llvm::DenseMap<llvm::StringRef, const proto::Var *> vars; // keys view names inside `main`
  vars.reserve(block.vars_size());
  for (const proto::Var &v : block.vars())
    vars[v.name()] = &v;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    if (isDistributedLookup(op))
      return makeError("op #{0} (lookup_table) has is_distributed=true but the distributed-table "
                       "pass did not run (transpile() runs it)",
                       i);
    if (op.role() != proto::OPTIMIZE || config.hybrid) // hybrid: dense params stay on trainers
      continue;
    auto info = readOptimizer(op, i);
    if (!info)
      return info.takeError();
    for (const auto &[slot, var] : info->shared) // the pservers declare them as main does
      if (!vars.lookup(var))
        return undeclaredInput(op, i, slot, var);
    auto paramAndGrad = firstInputs(op, i, {"Param", "Grad"});
    if (!paramAndGrad)
      return paramAndGrad.takeError();
    ParamPlan p;
    p.param = std::move((*paramAndGrad)[0]);
    p.grad = std::move((*paramAndGrad)[1]);
    const proto::Var *v = vars.lookup(p.param);
    if (!v)
      return makeError("op #{0} ({1}) updates {2}, which is not declared", i, op.type(), p.param);
    p.dtype = v->type().dtype();
    p.dims.assign(v->type().dims().begin(), v->type().dims().end());
    p.optimizer = std::move(*info);
    plan.params.push_back(std::move(p));
  }
  if (config.hybrid && plan.tables.empty())
    return makeError("a hybrid job puts distributed tables (is_distributed lookups) on pservers, "
                     "and this model has none: run it with --mode collective");
  if (plan.params.empty() && plan.tables.empty())
    return makeError("the program has no optimizer ops, so there is nothing to distribute; build "
                     "it with an optimizer's minimize()");
  llvm::sort(plan.params, [](const ParamPlan &a, const ParamPlan &b) { return a.param < b.param; });

  int64_t numEndpoints = static_cast<int64_t>(config.pservers.size());
  size_t roundRobin = 0; // one counter across all blocks of all params
  for (ParamPlan &p : plan.params) {
    auto sizes = sliceSizes(p.dims, config.sliceVarUp ? numEndpoints : 1, config.minBlockSize);
    int64_t begin = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      VarBlock b;
      b.index = static_cast<unsigned>(i);
      b.name = sizes.size() > 1 ? blockName(p.param, b.index) : p.param;
      b.gradName = sizes.size() > 1 ? blockName(p.grad, b.index) : p.grad;
      b.begin = begin;
      b.numel = sizes[i];
      b.dims = p.dims;
      if (p.dims.size() >= 2)
        b.dims[0] = sizes[i] / p.rowWidth();
      else
        b.dims = {sizes[i]};
      b.endpointIndex = config.splitMethod == "hash_name"
                            ? fnv1a64(b.name) % static_cast<uint64_t>(numEndpoints)
                            : roundRobin++ % static_cast<size_t>(numEndpoints);
      b.endpoint = config.pservers[b.endpointIndex];
      begin += sizes[i];
      p.blocks.push_back(std::move(b));
    }
  }
  return plan;
}

std::vector<int64_t> DistributePlan::endpointBytes() const {
  std::vector<int64_t> bytes(config.pservers.size(), 0);
  for (const ParamPlan &p : params)
    for (const VarBlock &b : p.blocks)
      bytes[b.endpointIndex] += b.numel * static_cast<int64_t>(dtypeSize(p.dtype));
  return bytes;
}

std::string DistributePlan::digest(bool withEndpoints) const {
  std::string s = modeName(config.mode).str() + (config.hybrid ? " hybrid|" : "|") +
                  std::to_string(config.trainers) + "|" +
                  std::to_string(config.mode == Mode::Geo ? config.geoKSteps : 0);
  for (const std::string &ep : config.pservers)
    s += "|" + (withEndpoints ? ep : std::string("pserver"));
  for (const ParamPlan &p : params) // appended piece by piece: no temporary string per block
    for (const VarBlock &b : p.blocks)
      s.append("|")
          .append(b.name)
          .append(":")
          .append(std::to_string(b.numel))
          .append("@")
          .append(std::to_string(b.endpointIndex));
  for (const TablePlan &t : tables)
    s += "|table " + t.table + ":" + std::to_string(t.width) + "/" +
         std::to_string(config.tableShards) + "/" + std::to_string(t.admitAfter) + "/" +
         std::to_string(t.admitProbability) + "/" + std::to_string(t.evictAfter);
  return llvm::formatv("{0:x16}", fnv1a64(s)).str();
}

std::string jobDigest(const DistributePlan &plan, uint64_t jobHash, bool withEndpoints) {
  std::string job = llvm::formatv("|job {0:x16}", jobHash).str();
  return llvm::formatv("{0:x16}", fnv1a64(job, fnv1a64(plan.digest(withEndpoints)))).str();
}

std::string DistributePlan::text() const {
  std::string out = llvm::formatv("# distribute plan: mode {0}, {1} trainers, {2} pservers, "
                                  "split {3}, min_block_size {4}, digest {5}\n",
                                  modeName(config.mode), config.trainers, config.pservers.size(),
                                  config.splitMethod, config.minBlockSize, digest())
                        .str();
  out += llvm::formatv("{0,-32} {1,8} {2,10} {3,12}  {4}\n", "block", "rows", "elements", "bytes",
                       "endpoint")
             .str();
  for (const ParamPlan &p : params)
    for (const VarBlock &b : p.blocks)
      out += llvm::formatv("{0,-32} {1,8} {2,10} {3,12}  {4}\n", b.name, b.dims[0], b.numel,
                           b.numel * static_cast<int64_t>(dtypeSize(p.dtype)), b.endpoint)
                 .str();
  for (const TablePlan &t : tables)
    out += llvm::formatv("{0,-32} {1,8} {2,10} {3,12}  all, by {4} virtual shards ({5})\n", t.table,
                         "table", t.width, "per row " + std::to_string(t.width * 4),
                         config.tableShards, t.optimizer.type())
               .str();
  out += "# load per endpoint\n";
  auto bytes = endpointBytes();
  for (size_t i = 0; i < bytes.size(); ++i)
    out += llvm::formatv("{0,-32} {1,12} bytes\n", config.pservers[i], bytes[i]).str();
  return out;
}

} // namespace oar
