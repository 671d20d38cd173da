// Element-wise activations: relu, sigmoid, tanh. Their gradients need only Out.
#include "ops/common.h"

namespace oar::ops {

template <const char *GradType> static void gradActivation(GradBuilder &g) {
  g.addOp(GradType, {{"Out", g.output("Out")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

// The grad op's X@GRAD has Out's type (the same as X's).
static llvm::Error inferActivationGrad(InferContext &ctx) {
  ctx.setOutput("X@GRAD", ctx.input("Out"));
  return llvm::Error::success();
}

static llvm::Error inferActivation(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  return inferSameAsX(ctx);
}

static constexpr char kReluGrad[] = "relu_grad";
static constexpr char kSigmoidGrad[] = "sigmoid_grad";
static constexpr char kTanhGrad[] = "tanh_grad";

#define OAR_ACTIVATION_OP(name, what, gradType)                                                    \
  OAR_OP(name)                                                                                     \
      .summary(what)                                                                               \
      .input("X", "input")                                                                         \
      .output("Out", "X's shape")                                                                  \
      .inferShape(inferActivation)                                                                 \
      .grad(gradActivation<gradType>);                                                             \
  OAR_OP(name##_grad)                                                                              \
      .summary("gradient of " #name ", from Out")                                                  \
      .input("Out", "forward Out")                                                                 \
      .input("Out@GRAD", "gradient of Out")                                                        \
      .output("X@GRAD", "gradient of X")                                                           \
      .inferShape(inferActivationGrad)                                                             \
      .noGrad(kGradOpReason)

OAR_ACTIVATION_OP(relu, "Out = max(X, 0)", kReluGrad);
OAR_ACTIVATION_OP(sigmoid, "Out = 1 / (1 + exp(-X))", kSigmoidGrad);
OAR_ACTIVATION_OP(tanh, "Out = tanh(X)", kTanhGrad);

} // namespace oar::ops
