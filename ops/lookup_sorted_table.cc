// lookup_sorted_table: embedding rows of an exported table, found by key among its sorted keys.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferLookupSortedTable(InferContext &ctx) {
  const VarType &ids = ctx.input("Ids"), &keys = ctx.input("Keys"), &values = ctx.input("Values");
  if (ids.dtype != proto::I64)
    return makeError("{0}; ids must be i64", ctx.describe("Ids"));
  if (keys.dtype != proto::I64 || keys.rank() != 1)
    return makeError("{0}; keys must be i64 [n]", ctx.describe("Keys"));
  if (values.dtype != proto::F32 || values.rank() != 2 ||
      (keys.dims[0] >= 0 && values.dims[0] >= 0 && values.dims[0] != keys.dims[0]))
    return makeError("{0}; values must be f32 [n, width] with a row per key ({1})",
                     ctx.describe("Values"), ctx.describe("Keys"));
  VarType out = ids;
  out.dtype = proto::F32;
  if (out.rank() >= 2 && out.dims.back() == 1)
    out.dims.back() = values.dims[1]; // [N, 1] ids give [N, width], as lookup_table's do
  else
    out.dims.push_back(values.dims[1]);
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

OAR_OP(lookup_sorted_table)
    .summary("Out[i] = the row of key Ids[i] in an exported table (sorted Keys, their Values); a "
             "key the table does not hold reads the weights it would have started with")
    .input("Ids", "i64 keys (read as uint64), [N, 1] or [N] or [N, slots]")
    .input("Keys", "i64 [n]: the table's keys, sorted")
    .input("Values", "f32 [n, width]: the row of each key")
    .input("Index",
           "i32 slots of an open-addressing index of Keys (serving/key_index.h); "
           "without it (or empty) a key is found by binary search, and keys 0..n-1 "
           "are their own rows",
           kOptional)
    .output("Out", "the rows, [N, width] (or [N, slots, width])")
    .attr<int64_t>("padding_idx", -1, "an id whose row reads as zeros")
    .attr<std::string>("table", "", "the table's name: with seed, fixes a missing key's weights")
    .attr<std::string>("init", "constant",
                       "how a missing key's weights start: uniform | "
                       "gaussian | constant")
    .attr<float>("init_a", 0.0f, "uniform: min; gaussian: mean; constant: the value")
    .attr<float>("init_b", 0.0f, "uniform: max; gaussian: std")
    .attr<int64_t>("seed", 0, "the table's initialiser's seed")
    .inferShape(inferLookupSortedTable)
    .noGrad("serving only: an exported table is not trained");

} // namespace oar::ops
