// lookup_table: embedding rows of W picked by integer ids.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferLookupTable(InferContext &ctx) {
  const VarType &w = ctx.input("W"), &ids = ctx.input("Ids");
  if (w.rank() != 2)
    return makeError("{0}; the table must be [rows, width]", ctx.describe("W"));
  if (ids.dtype != proto::I64)
    return makeError("{0}; ids must be i64", ctx.describe("Ids"));
  VarType out = ids;
  out.dtype = w.dtype;
  if (out.rank() >= 2 && out.dims.back() == 1)
    out.dims.back() = w.dims[1]; // [N, 1] ids give [N, width], as in Paddle
  else
    out.dims.push_back(w.dims[1]);
  ctx.setOutput("Out", out);
  return requireFloat(ctx, "W");
}

// With is_sparse, W@GRAD holds only the looked-up rows: a SelectedRows of W's shape.
static llvm::Error inferLookupTableGrad(InferContext &ctx) {
  VarType dw = ctx.input("W");
  if (ctx.attrs().getBool("is_sparse"))
    dw.kind = proto::SELECTED_ROWS;
  ctx.setOutput("W@GRAD", dw);
  return llvm::Error::success();
}

static void gradLookupTable(GradBuilder &g) {
  g.addOp("lookup_table_grad",
          {{"W", g.input("W")}, {"Ids", g.input("Ids")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"W@GRAD", g.inputGrad("W")}});
}

OAR_OP(lookup_table)
    .summary("Out[i] = W[Ids[i]]")
    .input("W", "the table [rows, width]")
    .input("Ids", "i64 row ids, [N, 1] or [N]")
    .output("Out", "the rows, [N, width]")
    .attr<int64_t>("padding_idx", -1, "an id whose row reads as zeros and gets no gradient")
    .attr<bool>("is_sparse", false,
                "make W@GRAD selected rows: the ids looked up (in order, repeats kept, "
                "padding_idx left out) and Out@GRAD's rows")
    .attr<bool>("is_distributed", false, "the table lives on the pservers")
    .attr<int64_t>("admit_after", 1,
                   "distributed: a key gets a row at its admit_after-th push (the pushes "
                   "before are dropped)")
    .attr<float>("admit_probability", 1.0f,
                 "distributed: the share of keys that may get a row (picked by a hash of the key)")
    .attr<int64_t>("evict_after", 0,
                   "distributed: rows no push touched for evict_after steps are dropped (0: never)")
    .inferShape(inferLookupTable)
    .grad(gradLookupTable);

OAR_OP(lookup_table_grad)
    .summary("gradient of lookup_table: Out@GRAD rows added into W's rows (dense), or picked "
             "as selected rows (is_sparse)")
    .input("W", "forward W (for its dims)")
    .input("Ids", "forward Ids")
    .input("Out@GRAD", "gradient of Out")
    .output("W@GRAD", "gradient of W; selected rows when is_sparse")
    .sameAttrsAs(oarOpSchema_lookup_table)
    .inferShape(inferLookupTableGrad)
    .noGrad(kGradOpReason);

} // namespace oar::ops
