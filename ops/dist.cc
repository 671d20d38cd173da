// Ops the DistributeTranspiler inserts. Their kernels talk to pservers through the runtime.
#include "ops/common.h"
#include "ops/table_limits.h"

namespace oar::ops {

// Vars these ops write are declared by the transpiler; nothing to infer.
static llvm::Error inferNothing(InferContext &) { return llvm::Error::success(); }

// The runtime reads these ops' list attrs by position. A hand-edited program whose lists
// disagree is refused here, before any kernel runs, instead of read past a list's end.

/// Entries of list attr `name` as the schema reads it, without copying them: these checks run
/// before the op on every step.
static size_t listSize(const InferContext &ctx, llvm::StringRef name) {
  const proto::Attr &a = ctx.attrs().get(name);
  return a.has_ints() ? a.ints().v_size() : a.strings().v_size();
}

/// An error unless list attr `attr` has `expected` entries, one for each of `what`.
static llvm::Error checkCount(const InferContext &ctx, llvm::StringRef attr, size_t expected,
                              llvm::StringRef what) {
  if (listSize(ctx, attr) == expected)
    return llvm::Error::success();
  return makeError("attr {0} has {1} entries for {2} {3}", attr, listSize(ctx, attr), expected,
                   what);
}

/// An error unless int attr `name` is at least 1.
static llvm::Error checkPositive(const InferContext &ctx, llvm::StringRef name) {
  int64_t v = ctx.attrs().getInt(name);
  return v >= 1 ? llvm::Error::success()
                : makeError("attr {0} is {1}; it must be at least 1", name, v);
}

static llvm::Error inferSend(InferContext &ctx) {
  return checkCount(ctx, "epmap", ctx.inputCount("X"), "vars in X");
}

static llvm::Error inferRecv(InferContext &ctx) {
  return checkCount(ctx, "epmap", ctx.outputCount("Out"), "vars in Out");
}

static llvm::Error inferListenAndServ(InferContext &ctx) {
  if (llvm::Error err = checkPositive(ctx, "fanin"))
    return err;
  size_t blocks = listSize(ctx, "param_blocks");
  for (const char *list : {"block_params", "block_row_begin", "optimize_blocks"})
    if (llvm::Error err = checkCount(ctx, list, blocks, "param_blocks"))
      return err;
  return llvm::Error::success();
}

/// geo_sync's lists: `sections[p]` blocks of Param p, and a row count, name and endpoint for
/// each block. Whether a param's block rows add up to its rows the kernel checks: it has the
/// param at hand, and looking each param up here would cost every step.
static llvm::Error inferGeoSync(InferContext &ctx) {
  for (const char *positive : {"k_steps", "trainers"})
    if (llvm::Error err = checkPositive(ctx, positive))
      return err;
  if (llvm::Error err = checkCount(ctx, "sections", ctx.inputCount("Param"), "vars in Param"))
    return err;
  size_t blocks = 0, rows = listSize(ctx, "block_rows");
  for (int64_t n : ctx.attrs().get("sections").ints().v()) {
    if (n < 1 || static_cast<uint64_t>(n) > rows - blocks)
      return makeError("attr sections holds {0}: each param needs at least 1 block, and the "
                       "params together at most the {1} entries of block_rows",
                       n, rows);
    blocks += static_cast<size_t>(n);
  }
  for (const char *list : {"block_rows", "block_names", "epmap"})
    if (llvm::Error err = checkCount(ctx, list, blocks, "blocks in sections"))
      return err;
  return llvm::Error::success();
}

OAR_OP(send)
    .summary("send each X[i] to the pserver at epmap[i] (a gradient or GEO delta block)")
    .input("X", "blocks to send", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each X")
    .inferShape(inferSend)
    .noGrad("communication");

OAR_OP(recv)
    .summary("Out[i] = the var of that name held by the pserver at epmap[i]")
    .output("Out", "blocks to receive", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each Out")
    .inferShape(inferRecv)
    .noGrad("communication");

/// c_allreduce_avg writes its result into its inputs: Out names X, in order.
static llvm::Error inferAllreduce(InferContext &ctx) {
  if (llvm::Error err = checkPositive(ctx, "ranks"))
    return err;
  std::vector<std::string> in = opInputs(ctx.op(), "X"), out = opOutputs(ctx.op(), "Out");
  if (in.size() != out.size())
    return makeError("Out has {0} vars for {1} in X; they must be the same vars", out.size(),
                     in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != out[i])
      return makeError("Out[{0}] is {1} but X[{0}] is {2}: the mean is written in place", i, out[i],
                       in[i]);
    ctx.setOutput("Out", ctx.input("X", i), i);
  }
  return llvm::Error::success();
}

OAR_OP(c_allreduce_avg)
    .summary("each X[i] = the mean of X[i] over the job's trainers (collective mode), in place")
    .input("X", "dense gradients, float32 or float64", kDuplicable)
    .output("Out", "the same vars as X", kDuplicable)
    .attr<int64_t>("ranks", 1, "the trainers the mean is over")
    .inferShape(inferAllreduce)
    .noGrad("communication");

static llvm::Error inferBucketStart(InferContext &ctx) {
  if (llvm::Error err = checkPositive(ctx, "ranks"))
    return err;
  if (ctx.attrs().getInt("bucket") < 0)
    return makeError("bucket is {0}; buckets are numbered from 0", ctx.attrs().getInt("bucket"));
  return llvm::Error::success();
}

static llvm::Error inferBucketWait(InferContext &ctx) {
  if (llvm::Error err = inferBucketStart(ctx))
    return err;
  return inferAllreduce(ctx);
}

OAR_OP(c_allreduce_start)
    .summary("start averaging the gradients X over the job's trainers, in place, on the "
             "collective's thread while the ops after it run (a gradient bucket); nothing may "
             "touch X until the c_allreduce_wait of the same bucket")
    .input("X", "dense gradients, float32 or float64, one dtype", kDuplicable)
    .attr<int64_t>("ranks", 1, "the trainers the mean is over")
    .attr<int64_t>("bucket", 0, "the bucket's number in the step, from 0")
    .inferShape(inferBucketStart)
    .noGrad("communication");

OAR_OP(c_allreduce_wait)
    .summary("wait until the bucket's c_allreduce_start has averaged X; Out names X")
    .input("X", "the bucket's gradients", kDuplicable)
    .output("Out", "the same vars as X", kDuplicable)
    .attr<int64_t>("ranks", 1, "the trainers the mean is over")
    .attr<int64_t>("bucket", 0, "the bucket's number in the step, from 0")
    .inferShape(inferBucketWait)
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
    .inferShape(inferListenAndServ)
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
    .inferShape(inferGeoSync)
    .noGrad("communication");

} // namespace oar::ops

namespace oar::ops {

// A distributed table (lookup_table with is_distributed) lives on the pservers only; the
// transpiler's distributed-table pass writes these ops in place of its lookups and update.

/// The attrs a table op routes keys by: a key's pserver is a hash mod num_shards mod the number
/// of endpoints, so neither may be 0.
static llvm::Error checkRouting(InferContext &ctx) {
  for (const char *positive : {"num_shards", "width"})
    if (llvm::Error err = checkPositive(ctx, positive))
      return addContext(std::move(err), "table " + ctx.attrs().getString("table"));
  if (ctx.attrs().getInt("width") > kMaxTableWidth)
    return makeError("table {0}: width {1} is over the limit of {2}",
                     ctx.attrs().getString("table"), ctx.attrs().getInt("width"), kMaxTableWidth);
  if (listSize(ctx, "endpoints") == 0)
    return makeError("table {0}: no endpoints", ctx.attrs().getString("table"));
  return llvm::Error::success();
}

static llvm::Error inferDistributedLookup(InferContext &ctx) {
  if (llvm::Error err = checkRouting(ctx))
    return err;
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
    .OAR_TABLE_ROUTING_ATTRS.inferShape(checkRouting)
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
    .attr<float>("initial_accumulator", 0.0f,
                 "adagrad: the squared-gradient sum a new row starts from (the single-machine "
                 "program's fill of the optimizer's Moment)")
    .attr<float>("weight_decay", 0.0f, "L2 decay of the rows a push touches")
    .attr<float>("beta1", 0.9f, "adam")
    .attr<float>("beta2", 0.999f, "adam")
    .attr<std::string>("init", "uniform", "a row's first weights: uniform | gaussian | constant")
    .attr<float>("init_a", 0.0f, "uniform: min; gaussian: mean; constant: the value")
    .attr<float>("init_b", 0.0f, "uniform: max; gaussian: std")
    .attr<int64_t>("seed", 0, "with the table's name and the key, fixes a row's first weights")
    .attr<int64_t>("admit_after", 1, "a key gets a row at its admit_after-th push")
    .attr<float>("admit_probability", 1.0f, "the share of keys that may get a row")
    .attr<int64_t>("evict_after", 0, "rows unseen for evict_after steps are dropped (0: never)")
    .attr<std::vector<std::string>>("state_vars", {},
                                    "SLOT=VAR: the single-machine optimizer's state var of each "
                                    "slot, where a dense checkpoint of the table keeps its state")
    .inferShape(inferNothing)
    .noGrad("communication");

} // namespace oar::ops
