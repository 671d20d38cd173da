// scale: Out = scale * X + bias.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferScale(InferContext &ctx) {
  ctx.setOutput("Out", ctx.input("X")); // same shape and dtype as X
  return llvm::Error::success();
}

// dOut/dX is the constant `scale`, so the gradient is one more scale op.
static void gradScale(GradBuilder &g) {
  g.addPlainOp("scale", {{"X", g.outputGrad("Out")}}, {{"Out", g.inputGrad("X")}},
               {{"scale", g.attr("scale")}, {"bias", 0.0f}});
}

OAR_OP(scale)
    .summary("Multiply X by a scalar and add a scalar")
    .input("X", "tensor to scale")
    .output("Out", "same shape and dtype as X")
    .attr<float>("scale", 1.0f, "multiplier")
    .attr<float>("bias", 0.0f, "added after multiplying")
    .inferShape(inferScale)
    .grad(gradScale);

} // namespace oar::ops
