// Ops the DistributeTranspiler inserts. Their kernels talk to pservers through the runtime.
#include "ops/common.h"

namespace oar::ops {

// Vars these ops write are declared by the transpiler; nothing to infer.
static llvm::Error inferNothing(InferContext &) { return llvm::Error::success(); }

OAR_OP(send)
    .summary("send each X[i] to the pserver at epmap[i] (a gradient or GEO delta block)")
    .input("X", "blocks to send", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each X")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(recv)
    .summary("Out[i] = the var of that name held by the pserver at epmap[i]")
    .output("Out", "blocks to receive", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each Out")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(send_barrier)
    .summary("tell every pserver this trainer has sent all of this step's gradients")
    .attr<std::vector<std::string>>("endpoints", {}, "every pserver")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(fetch_barrier)
    .summary("tell every pserver this trainer has fetched all of this step's parameters")
    .attr<std::vector<std::string>>("endpoints", {}, "every pserver")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(listen_and_serv)
    .summary("a pserver's loop: receive gradients, run optimize blocks, serve parameters")
    .attr<std::string>("endpoint", "", "host:port this pserver serves")
    .attr<int64_t>("fanin", 1, "number of trainers")
    .attr<std::string>("mode", "sync", "sync | async | geo")
    .attr<std::vector<std::string>>("grad_to_block_id", {},
                                    "`<grad block>:<optimize block index>` for each grad block")
    .attr<std::vector<std::string>>("param_blocks", {}, "the param blocks this pserver serves")
    .attr<std::vector<std::string>>("block_params", {}, "the whole param of each param block")
    .attr<std::vector<int64_t>>("block_row_begin", {},
                                "first row (element for rank 1) of each param block in its param")
    .attr<std::vector<int64_t>>("optimize_blocks", {}, "sub-block indices, one per param block")
    .attr<std::string>("plan_digest", "", "hash of the distribute plan; trainers must match")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(geo_sync)
    .summary("every k_steps: send (Param - synced)/trainers per block, pull the params, rebase")
    .input("Param", "the trainer's local parameters", kDuplicable)
    .attr<int64_t>("k_steps", 100, "steps between syncs")
    .attr<int64_t>("trainers", 1, "number of trainers (the delta is divided by it)")
    .attr<std::vector<int64_t>>("sections", {}, "number of blocks of each Param")
    .attr<std::vector<int64_t>>("block_rows", {}, "rows (elements for rank 1) of each block")
    .attr<std::vector<std::string>>("block_names", {}, "the pserver name of each block")
    .attr<std::vector<std::string>>("epmap", {}, "the endpoint of each block")
    .inferShape(inferNothing)
    .noGrad("communication");

} // namespace oar::ops

namespace oar::ops {

// A distributed table (lookup_table with is_distributed) lives on the pservers only; the
// transpiler's distributed-table pass writes these ops in place of its lookups and update.

static llvm::Error inferDistributedLookup(InferContext &ctx) {
  const VarType &ids = ctx.input("Ids");
  if (ids.dtype != proto::I64)
    return makeError("{0}; ids must be i64", ctx.describe("Ids"));
  VarType out = ids;
  out.dtype = proto::F32;
  int64_t width = ctx.attrs().getInt("width");
  if (out.rank() >= 2 && out.dims.back() == 1)
    out.dims.back() = width; // [N, 1] ids give [N, width], as lookup_table's do
  else
    out.dims.push_back(width);
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

#define OAR_TABLE_ROUTING_ATTRS                                                                    \
  attr<std::string>("table", "", "the table's name")                                               \
      .attr<int64_t>("width", 1, "floats per row")                                                 \
      .attr<int64_t>("height", 0, "declared rows: keys must be below it (0: any uint64 key)")      \
      .attr<std::vector<std::string>>("endpoints", {}, "every pserver, in order")                  \
      .attr<int64_t>("num_shards", 1000,                                                           \
                     "virtual shards: a key's shard is a hash of it mod num_shards, and shard s "  \
                     "lives on pserver s mod the number of pservers")                              \
      .attr<int64_t>("padding_idx", -1, "an id whose row reads as zeros and gets no gradient")

OAR_OP(distributed_lookup_table)
    .summary("Out[i] = the row of key Ids[i] of a table held by the pservers: the batch's keys, "
             "each once, are pulled from the pservers that own them")
    .input("Ids", "i64 keys (read as uint64), [N, 1] or [N] or [N, slots]")
    .output("Out", "the rows, [N, width] (or [N, slots, width])")
    .OAR_TABLE_ROUTING_ATTRS.inferShape(inferDistributedLookup)
    .noGrad("the pservers update the table: distributed_push_sparse sends its gradient");

OAR_OP(distributed_push_sparse)
    .summary("send the gradient of a distributed table: the rows of Out@GRAD of each key summed "
             "(each key once) to the pserver that owns it")
    .input("Ids", "the forward lookup's keys")
    .input("Out@GRAD", "gradient of the lookup's Out")
    .OAR_TABLE_ROUTING_ATTRS.inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(sparse_table)
    .summary("declares a distributed table this pserver holds rows of; listen_and_serv serves it")
    .input("LearningRate", "[1] learning rate of the table's optimizer")
    .attr<std::string>("table", "", "the table's name")
    .attr<int64_t>("width", 1, "floats per row")
    .attr<int64_t>("num_shards", 1000, "virtual shards of the table")
    .attr<std::string>("optimizer", "sgd", "sgd | adagrad | adam")
    .attr<bool>("row_wise", false, "adagrad: one accumulator per row")
    .attr<float>("epsilon", 1e-6f, "adagrad, adam: added to the denominator")
    .attr<float>("beta1", 0.9f, "adam")
    .attr<float>("beta2", 0.999f, "adam")
    .attr<std::string>("init", "uniform", "a row's first weights: uniform | gaussian | constant")
    .attr<float>("init_a", 0.0f, "uniform: min; gaussian: mean; constant: the value")
    .attr<float>("init_b", 0.0f, "uniform: max; gaussian: std")
    .attr<int64_t>("seed", 0, "with the table's name and the key, fixes a row's first weights")
    .attr<int64_t>("admit_after", 1, "a key gets a row at its admit_after-th push")
    .attr<float>("admit_probability", 1.0f, "the share of keys that may get a row")
    .attr<int64_t>("evict_after", 0, "rows unseen for evict_after steps are dropped (0: never)")
    .inferShape(inferNothing)
    .noGrad("communication");

} // namespace oar::ops
