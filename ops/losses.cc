// Per-example losses: cross_entropy, softmax_with_cross_entropy,
// sigmoid_cross_entropy_with_logits, square_error_cost. Each gives one value per row.
#include "ops/common.h"

namespace oar::ops {

// X is [N, C] float; Label is [N, 1] int64 class ids.
static llvm::Error checkClassLabel(InferContext &ctx, llvm::StringRef xSlot) {
  const VarType &x = ctx.input(xSlot), &label = ctx.input("Label");
  if (llvm::Error err = requireFloat(ctx, xSlot))
    return err;
  if (x.rank() != 2)
    return makeError("{0}; it must be [batch, classes]", ctx.describe(xSlot));
  if (label.dtype != proto::I64 || label.rank() != 2 || label.dims[1] != 1 ||
      !dimsAgree(label.dims[0], x.dims[0]))
    return makeError("{0} but {1}; Label must be i64[batch,1]", ctx.describe(xSlot),
                     ctx.describe("Label"));
  return llvm::Error::success();
}

static llvm::Error inferCrossEntropy(InferContext &ctx) {
  if (llvm::Error err = checkClassLabel(ctx, "X"))
    return err;
  ctx.setOutput("Y", makeType(ctx.input("X").dtype, {ctx.input("X").dims[0], 1}));
  return llvm::Error::success();
}

static void gradCrossEntropy(GradBuilder &g) {
  g.addOp("cross_entropy_grad",
          {{"X", g.input("X")}, {"Label", g.input("Label")}, {"Y@GRAD", g.outputGrad("Y")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(cross_entropy)
    .summary("Y = -log(X[label]) per row, X holding probabilities")
    .input("X", "probabilities [batch, classes]")
    .input("Label", "i64 class ids [batch, 1]")
    .output("Y", "loss per row [batch, 1]")
    .inferShape(inferCrossEntropy)
    .grad(gradCrossEntropy);

OAR_OP(cross_entropy_grad)
    .summary("gradient of cross_entropy")
    .input("X", "forward X")
    .input("Label", "forward Label")
    .input("Y@GRAD", "gradient of Y")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

static llvm::Error inferSoftmaxCe(InferContext &ctx) {
  if (llvm::Error err = checkClassLabel(ctx, "Logits"))
    return err;
  const VarType &x = ctx.input("Logits");
  ctx.setOutput("Softmax", x);
  ctx.setOutput("Loss", makeType(x.dtype, {x.dims[0], 1}));
  return llvm::Error::success();
}

static void gradSoftmaxCe(GradBuilder &g) {
  g.addOp("softmax_with_cross_entropy_grad",
          {{"Softmax", g.output("Softmax")},
           {"Label", g.input("Label")},
           {"Loss@GRAD", g.outputGrad("Loss")}},
          {{"Logits@GRAD", g.inputGrad("Logits")}});
}

static llvm::Error inferSoftmaxCeGrad(InferContext &ctx) {
  ctx.setOutput("Logits@GRAD", ctx.input("Softmax"));
  return llvm::Error::success();
}

OAR_OP(softmax_with_cross_entropy)
    .summary("Loss = -log(softmax(Logits)[label]) per row, computed stably")
    .input("Logits", "unnormalised scores [batch, classes]")
    .input("Label", "i64 class ids [batch, 1]")
    .output("Softmax", "softmax(Logits), kept for the gradient")
    .output("Loss", "loss per row [batch, 1]")
    .inferShape(inferSoftmaxCe)
    .grad(gradSoftmaxCe);

OAR_OP(softmax_with_cross_entropy_grad)
    .summary("gradient of softmax_with_cross_entropy: (Softmax - onehot(Label)) * Loss@GRAD")
    .input("Softmax", "forward Softmax")
    .input("Label", "forward Label")
    .input("Loss@GRAD", "gradient of Loss")
    .output("Logits@GRAD", "gradient of Logits")
    .inferShape(inferSoftmaxCeGrad)
    .noGrad(kGradOpReason);

// X and Label have the same float shape.
static llvm::Error inferSameShapePair(InferContext &ctx, llvm::StringRef other) {
  const VarType &x = ctx.input("X"), &y = ctx.input(other);
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  bool same = x.dtype == y.dtype && x.rank() == y.rank();
  for (int64_t i = 0; same && i < x.rank(); ++i)
    same = dimsAgree(x.dims[i], y.dims[i]);
  if (!same)
    return makeError("{0} but {1}; they must have the same shape and dtype", ctx.describe("X"),
                     ctx.describe(other));
  ctx.setOutput("Out", x);
  return llvm::Error::success();
}

static llvm::Error inferSigmoidCe(InferContext &ctx) { return inferSameShapePair(ctx, "Label"); }

static void gradSigmoidCe(GradBuilder &g) {
  g.addOp("sigmoid_cross_entropy_with_logits_grad",
          {{"X", g.input("X")}, {"Label", g.input("Label")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(sigmoid_cross_entropy_with_logits)
    .summary("Out = max(X,0) - X*Label + log(1+exp(-|X|)), element-wise")
    .input("X", "logits")
    .input("Label", "targets in [0, 1], X's shape")
    .output("Out", "loss per element")
    .inferShape(inferSigmoidCe)
    .grad(gradSigmoidCe);

OAR_OP(sigmoid_cross_entropy_with_logits_grad)
    .summary("gradient of sigmoid_cross_entropy_with_logits: (sigmoid(X) - Label) * Out@GRAD")
    .input("X", "forward X")
    .input("Label", "forward Label")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

static llvm::Error inferSquareError(InferContext &ctx) { return inferSameShapePair(ctx, "Y"); }

static void gradSquareError(GradBuilder &g) {
  g.addOp("square_error_cost_grad",
          {{"X", g.input("X")}, {"Y", g.input("Y")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}, {"Y@GRAD", g.inputGrad("Y")}});
}

OAR_OP(square_error_cost)
    .summary("Out = (X - Y)^2, element-wise")
    .input("X", "prediction")
    .input("Y", "target, X's shape")
    .output("Out", "squared error per element")
    .inferShape(inferSquareError)
    .grad(gradSquareError);

OAR_OP(square_error_cost_grad)
    .summary("gradients of square_error_cost")
    .input("X", "forward X")
    .input("Y", "forward Y")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X", kOptional)
    .output("Y@GRAD", "gradient of Y", kOptional)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

} // namespace oar::ops
