// id_mod: keys folded into a table's rows.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferIdMod(InferContext &ctx) {
  const VarType &x = ctx.input("X");
  if (x.dtype != proto::I64)
    return makeError("{0}; ids must be i64", ctx.describe("X"));
  if (ctx.attrs().getInt("num_buckets") < 1)
    return makeError("num_buckets is {0}; need at least 1", ctx.attrs().getInt("num_buckets"));
  ctx.setOutput("Out", x);
  return llvm::Error::success();
}

OAR_OP(id_mod)
    .summary("Out = X mod num_buckets: keys (hashes, as the criteo feed's) folded into the rows "
             "of a table with num_buckets rows")
    .input("X", "i64 keys >= 0")
    .output("Out", "i64 ids in [0, num_buckets), shaped as X")
    .attr<int64_t>("num_buckets", 1, "rows of the table the ids index")
    .inferShape(inferIdMod)
    .noGrad("integer ids");

} // namespace oar::ops
