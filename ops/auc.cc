// auc: the area under the ROC curve, accumulated over batches in bucketed histograms (as
// Paddle's auc op).
#include "ops/common.h"

namespace oar::ops {

/// StatPos and StatNeg: i64 counts per bucket, num_thresholds + 1 of them.
static llvm::Error checkStat(InferContext &ctx, llvm::StringRef slot, int64_t buckets) {
  const VarType &t = ctx.input(slot);
  if (t.dtype != proto::I64 || t.rank() != 1 || !dimsAgree(t.dims[0], buckets))
    return makeError("{0}; it must be i64[{1}] (num_thresholds + 1 buckets), zeros at the start",
                     ctx.describe(slot), buckets);
  return llvm::Error::success();
}

static llvm::Error inferAuc(InferContext &ctx) {
  const VarType &pred = ctx.input("Predict"), &label = ctx.input("Label");
  int64_t thresholds = ctx.attrs().getInt("num_thresholds");
  if (thresholds < 1)
    return makeError("num_thresholds is {0}; it must be at least 1", thresholds);
  if (pred.rank() != 2 || !(dimsAgree(pred.dims[1], 1) || dimsAgree(pred.dims[1], 2)))
    return makeError("{0}; need positive-class probabilities [N, 1], or [N, 2] with the positive "
                     "class in column 1",
                     ctx.describe("Predict"));
  if (label.rank() != 2 || !dimsAgree(label.dims[1], 1) || !dimsAgree(label.dims[0], pred.dims[0]))
    return makeError("{0} and {1}; need one label per row, [N, 1], nonzero for a positive",
                     ctx.describe("Predict"), ctx.describe("Label"));
  for (const char *slot : {"StatPos", "StatNeg"})
    if (llvm::Error err = checkStat(ctx, slot, thresholds + 1))
      return err;
  ctx.setOutput("AUC", makeType(pred.dtype, {1}));
  ctx.setOutput("StatPosOut", ctx.input("StatPos"));
  ctx.setOutput("StatNegOut", ctx.input("StatNeg"));
  return requireFloat(ctx, "Predict");
}

OAR_OP(auc)
    .summary("AUC = area under the ROC curve of every row seen so far (bucketed by probability)")
    .input("Predict", "positive-class probabilities in [0, 1]: [N, 1], or [N, 2] using column 1")
    .input("Label", "[N, 1] labels of any dtype; nonzero is a positive")
    .input("StatPos", "i64[num_thresholds + 1]: positives per probability bucket so far")
    .input("StatNeg", "i64[num_thresholds + 1]: negatives per probability bucket so far")
    .output("AUC", "a one-element tensor: the ROC AUC of every row counted in the histograms")
    .output("StatPosOut", "StatPos with this batch added (same var as StatPos)")
    .output("StatNegOut", "StatNeg with this batch added (same var as StatNeg)")
    .attr<int64_t>("num_thresholds", 4095,
                   "buckets - 1: probability p falls in bucket floor(p * num_thresholds)")
    .inferShape(inferAuc)
    .noGrad("a metric, not differentiable");

} // namespace oar::ops
