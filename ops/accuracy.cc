// accuracy: the fraction of rows whose highest score is the label.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferAccuracy(InferContext &ctx) {
  const VarType &out = ctx.input("Out"), &label = ctx.input("Label");
  if (out.rank() != 2 || label.dtype != proto::I64 || label.rank() != 2)
    return makeError("{0} and {1}; need scores [N, C] and i64 labels [N, 1]", ctx.describe("Out"),
                     ctx.describe("Label"));
  ctx.setOutput("Accuracy", makeType(out.dtype, {1}));
  return requireFloat(ctx, "Out");
}

OAR_OP(accuracy)
    .summary("Accuracy = fraction of rows where argmax(Out) == Label")
    .input("Out", "scores or probabilities [N, C]")
    .input("Label", "i64 class ids [N, 1]")
    .output("Accuracy", "a one-element tensor")
    .inferShape(inferAccuracy)
    .noGrad("a metric, not differentiable");

} // namespace oar::ops
