// softmax over the last axis.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferSoftmax(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  return inferSameAsX(ctx);
}

static void gradSoftmax(GradBuilder &g) {
  g.addOp("softmax_grad", {{"Out", g.output("Out")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

static llvm::Error inferSoftmaxGrad(InferContext &ctx) {
  ctx.setOutput("X@GRAD", ctx.input("Out"));
  return llvm::Error::success();
}

OAR_OP(softmax)
    .summary("Out = exp(X) / sum(exp(X)) along the last axis")
    .input("X", "logits")
    .output("Out", "probabilities, X's shape")
    .inferShape(inferSoftmax)
    .grad(gradSoftmax);

OAR_OP(softmax_grad)
    .summary("gradient of softmax, from Out")
    .input("Out", "forward Out")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferSoftmaxGrad)
    .noGrad(kGradOpReason);

} // namespace oar::ops
