// Reductions: mean (of everything) and reduce_sum (over chosen dims).
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferMean(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  ctx.setOutput("Out", makeType(ctx.input("X").dtype, {1}));
  return llvm::Error::success();
}

static void gradMean(GradBuilder &g) {
  g.addOp("mean_grad", {{"X", g.input("X")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(mean)
    .summary("Out = mean of all elements of X")
    .input("X", "input")
    .output("Out", "a one-element tensor [1]")
    .inferShape(inferMean)
    .grad(gradMean);

OAR_OP(mean_grad)
    .summary("gradient of mean: Out@GRAD / numel(X) everywhere")
    .input("X", "forward X (for its shape)")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

/// The dims reduce_sum removes, normalised to [0, rank); all of them when reduce_all.
static llvm::Expected<std::vector<int64_t>> reducedDims(const InferContext &ctx) {
  int64_t rank = ctx.input("X").rank();
  std::vector<int64_t> dims;
  if (ctx.attrs().getBool("reduce_all")) {
    for (int64_t i = 0; i < rank; ++i)
      dims.push_back(i);
    return dims;
  }
  for (int64_t d : ctx.attrs().getInts("dim")) {
    if (d < -rank || d >= rank)
      return makeError("dim {0} is out of range for {1}", d, ctx.describe("X"));
    dims.push_back(d < 0 ? d + rank : d);
  }
  return dims;
}

static llvm::Error inferReduceSum(InferContext &ctx) {
  auto dims = reducedDims(ctx);
  if (!dims)
    return dims.takeError();
  const VarType &x = ctx.input("X");
  bool keep = ctx.attrs().getBool("keep_dim");
  VarType out;
  out.dtype = x.dtype;
  for (int64_t i = 0; i < x.rank(); ++i) {
    bool reduced = llvm::is_contained(*dims, i);
    if (!reduced)
      out.dims.push_back(x.dims[i]);
    else if (keep)
      out.dims.push_back(1);
  }
  if (out.dims.empty())
    out.dims.push_back(1);
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

static void gradReduceSum(GradBuilder &g) {
  g.addOp("reduce_sum_grad", {{"X", g.input("X")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(reduce_sum)
    .summary("Out = sum of X over `dim` (or over everything with reduce_all)")
    .input("X", "input")
    .output("Out", "X without the reduced dims (kept as 1 with keep_dim)")
    .attr<std::vector<int64_t>>("dim", {0}, "dims to sum over; negative counts from the end")
    .attr<bool>("keep_dim", false, "keep reduced dims with size 1")
    .attr<bool>("reduce_all", false, "sum over every dim")
    .inferShape(inferReduceSum)
    .grad(gradReduceSum);

OAR_OP(reduce_sum_grad)
    .summary("gradient of reduce_sum: Out@GRAD broadcast back over the reduced dims")
    .input("X", "forward X (for its shape)")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .sameAttrsAs(oarOpSchema_reduce_sum)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

} // namespace oar::ops
