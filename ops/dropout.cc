// dropout: inverted dropout whose mask comes from a counter-based generator keyed by (seed, step,
// trainer), so a run repeats, and a resumed run draws the masks the uninterrupted one drew.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferDropout(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  float p = ctx.attrs().getFloat("dropout_prob");
  if (!(p >= 0 && p < 1))
    return makeError("dropout_prob is {0}; it must be in [0, 1)", p);
  const VarType &step = ctx.input("Step");
  if (step.dtype != proto::I64 || step.rank() != 1 || step.dims[0] != 1)
    return makeError("{0}; it must be the op's step counter, i64[1]", ctx.describe("Step"));
  ctx.setOutput("Out", ctx.input("X"));
  ctx.setOutput("Mask", ctx.input("X"));
  ctx.setOutput("StepOut", step);
  return llvm::Error::success();
}

static void gradDropout(GradBuilder &g) {
  g.addPlainOp("dropout_grad", {{"Mask", g.output("Mask")}, {"Out@GRAD", g.outputGrad("Out")}},
               {{"X@GRAD", g.inputGrad("X")}});
}

static llvm::Error inferDropoutGrad(InferContext &ctx) {
  ctx.setOutput("X@GRAD", ctx.input("Mask"));
  return llvm::Error::success();
}

OAR_OP(dropout)
    .summary("Out = X * Mask, Mask 0 with probability dropout_prob and 1 / (1 - dropout_prob) "
             "otherwise, drawn from (seed, Step, trainer_id, element) by a counter-based "
             "generator; Step advances by one. is_test: Out = X, Step stays")
    .input("X", "input")
    .input("Step", "i64[1] training steps this op has run, starts at 0 (persistable)")
    .output("Out", "X's shape")
    .output("Mask", "the factor each element was multiplied by, for the gradient")
    .output("StepOut", "Step + 1 (same var as Step)")
    .attr<float>("dropout_prob", 0.5f, "probability of dropping an element")
    .attr<int64_t>("seed", 0, "the op's seed (the model's seed and the op's place in it)")
    .attr<int64_t>("trainer_id", 0, "which trainer runs it (set by the transpiler)")
    .attr<bool>("is_test", false, "the identity: evaluation and inference")
    .inferShape(inferDropout)
    .grad(gradDropout);

OAR_OP(dropout_grad)
    .summary("X@GRAD = Out@GRAD * Mask")
    .input("Mask", "forward Mask")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferDropoutGrad)
    .noGrad(kGradOpReason);

} // namespace oar::ops
