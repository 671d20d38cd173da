// CPU kernels of the trainer's distributed-table ops (distributed_lookup_table,
// distributed_push_sparse) and of sparse_table, which only declares a table to listen_and_serv.
#include <cstring>

#include "executor/kernel.h"
#include "runtime/node/run_env.h"
#include "runtime/tables/sparse_routing.h"
#include "support/error.h"
#include "llvm/ADT/DenseMap.h"

namespace oar::runtime {

namespace {

/// The keys of one batch of a table, each once, grouped by the pserver that owns them.
struct BatchKeys {
  int64_t ids = 0;                         // ids looked up, padding left out
  std::vector<std::vector<uint64_t>> keys; // by endpoint, in first-seen order
  /// For each position of Ids: its key's (endpoint, index in keys[endpoint]); endpoint -1 for
  /// padding_idx.
  std::vector<std::pair<int32_t, uint32_t>> where;
};

llvm::Expected<BatchKeys> groupKeys(KernelContext &ctx, size_t numEndpoints) {
  const Tensor &ids = ctx.input("Ids");
  int64_t pad = ctx.attrs().getInt("padding_idx"), height = ctx.attrs().getInt("height");
  SparseRouting routing{ctx.attrs().getInt("num_shards"), static_cast<int64_t>(numEndpoints)};
  BatchKeys batch;
  batch.keys.resize(numEndpoints);
  batch.where.resize(ids.numel());
  llvm::DenseMap<uint64_t, std::pair<int32_t, uint32_t>> seen;
  const int64_t *id = ids.data<int64_t>();
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (id[i] == pad) {
      batch.where[i] = {-1, 0};
      continue;
    }
    ++batch.ids;
    auto key = static_cast<uint64_t>(id[i]);
    if (reservedKey(key) || (height > 0 && key >= static_cast<uint64_t>(height)))
      return makeError("{0}: key {1} at position {2} is outside table {3} ({4})",
                       ctx.describeInput("Ids"), key, i, ctx.attrs().getString("table"),
                       height > 0 ? "declared with " + std::to_string(height) + " rows"
                                  : std::string("the two largest uint64 keys are reserved"));
    auto [it, fresh] = seen.try_emplace(key);
    if (fresh) {
      auto e = static_cast<int32_t>(routing.pserverOf(key));
      it->second = {e, static_cast<uint32_t>(batch.keys[e].size())};
      batch.keys[e].push_back(key);
    }
    batch.where[i] = it->second;
  }
  return batch;
}

/// What a pull and a push of a table share: the job's runtime, the table, and the batch's keys
/// grouped by pserver (counted in the run's table traffic).
struct TableStep {
  RunEnv *env = nullptr;
  std::string table;
  int64_t width = 1;
  std::vector<std::string> endpoints;
  BatchKeys batch;
};

llvm::Expected<TableStep> tableStep(KernelContext &ctx) {
  auto env = envOf(ctx, /*needComm=*/true);
  if (!env)
    return env.takeError();
  TableStep step{*env,
                 ctx.attrs().getString("table"),
                 ctx.attrs().getInt("width"),
                 ctx.attrs().getStrings("endpoints"),
                 {}};
  auto batch = groupKeys(ctx, step.endpoints.size());
  if (!batch)
    return batch.takeError();
  step.batch = std::move(*batch);
  // Keys go up, then rows come down (a pull) or go up with them (a push).
  int64_t keys = 0;
  for (const auto &k : step.batch.keys)
    keys += static_cast<int64_t>(k.size());
  int64_t perKey = 8 + 4 * step.width;
  RunEnv::TableTraffic &traffic = step.env->tableTraffic;
  traffic.ids += step.batch.ids;
  traffic.keys += keys;
  traffic.bytes += keys * perKey;
  traffic.bytesWithoutDedup += step.batch.ids * perKey;
  return step;
}

llvm::Error distributedLookupKernel(KernelContext &ctx) {
  auto step = tableStep(ctx);
  if (!step)
    return step.takeError();
  std::vector<Tensor> rows(step->endpoints.size());
  if (llvm::Error err = step->env->comm->pullRows(step->table, step->width, step->endpoints,
                                                  step->batch.keys, rows))
    return err;
  int64_t width = step->width;
  float *out = ctx.output("Out").data<float>();
  for (size_t i = 0; i < step->batch.where.size(); ++i) {
    auto [e, k] = step->batch.where[i];
    if (e < 0)
      std::fill_n(out + i * width, width, 0.0f);
    else
      std::memcpy(out + i * width, rows[e].data<float>() + k * width, width * sizeof(float));
  }
  return llvm::Error::success();
}

// The rows of each key are summed in the order of Ids, so the same batch gives the same bits.
llvm::Error distributedPushKernel(KernelContext &ctx) {
  auto step = tableStep(ctx);
  if (!step)
    return step.takeError();
  const BatchKeys &batch = step->batch;
  int64_t width = step->width;
  const Tensor &dout = ctx.input("Out@GRAD");
  if (dout.numel() != static_cast<int64_t>(batch.where.size()) * width)
    return makeError("{0} has {1} elements; expected {2} ids x width {3}",
                     ctx.describeInput("Out@GRAD"), dout.numel(), batch.where.size(), width);
  std::vector<Tensor> grads;
  for (const auto &keys : batch.keys)
    grads.emplace_back(proto::F32, std::vector<int64_t>{static_cast<int64_t>(keys.size()), width});
  const float *g = dout.data<float>();
  for (size_t i = 0; i < batch.where.size(); ++i) {
    auto [e, k] = batch.where[i];
    if (e < 0)
      continue;
    float *row = grads[e].data<float>() + k * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += g[i * width + j];
  }
  return step->env->comm->pushRows(step->table, step->endpoints, batch.keys, grads);
}

// listen_and_serv reads the sparse_table ops of its block; running one does nothing.
llvm::Error sparseTableKernel(KernelContext &) { return llvm::Error::success(); }

} // namespace

#define OAR_TABLE_KERNEL(op, fn)                                                                   \
  OAR_KERNEL(op, Device::Cpu, proto::F32, fn);                                                     \
  OAR_KERNEL(op, Device::Cpu, proto::I64, fn)

OAR_TABLE_KERNEL(distributed_lookup_table, distributedLookupKernel);
OAR_TABLE_KERNEL(distributed_push_sparse, distributedPushKernel);
OAR_TABLE_KERNEL(sparse_table, sparseTableKernel);

} // namespace oar::runtime
