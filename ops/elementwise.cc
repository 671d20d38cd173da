// elementwise_add/sub/mul with Paddle's `axis` broadcasting: Y's dims match a run of X's dims
// starting at `axis` (-1: aligned to X's last dims).
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferElementwise(InferContext &ctx) {
  const VarType &x = ctx.input("X"), &y = ctx.input("Y");
  if (x.dtype != y.dtype)
    return makeError("{0} but {1}; dtypes must match", ctx.describe("X"), ctx.describe("Y"));
  int64_t axis = ctx.attrs().getInt("axis");
  if (axis == -1)
    axis = x.rank() - y.rank();
  if (axis < 0 || axis + y.rank() > x.rank())
    return makeError("{0} cannot broadcast {1} at axis {2}", ctx.describe("X"), ctx.describe("Y"),
                     axis);
  for (int64_t i = 0; i < y.rank(); ++i)
    if (!dimsAgree(x.dims[axis + i], y.dims[i]))
      return makeError("{0} but {1}; Y's dim {2} must equal X's dim {3} (axis={4})",
                       ctx.describe("X"), ctx.describe("Y"), i, axis + i, axis);
  ctx.setOutput("Out", x);
  return llvm::Error::success();
}

template <const char *GradType> static void gradElementwise(GradBuilder &g) {
  g.addOp(GradType, {{"X", g.input("X")}, {"Y", g.input("Y")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}, {"Y@GRAD", g.inputGrad("Y")}});
}

static constexpr char kAddGrad[] = "elementwise_add_grad";
static constexpr char kSubGrad[] = "elementwise_sub_grad";
static constexpr char kMulGrad[] = "elementwise_mul_grad";

#define OAR_ELEMENTWISE_OP(name, what, gradType)                                                   \
  OAR_OP(name)                                                                                     \
      .summary(what)                                                                               \
      .input("X", "left operand")                                                                  \
      .input("Y", "right operand, broadcast over X")                                               \
      .output("Out", "X's shape")                                                                  \
      .attr<int64_t>("axis", -1, "X's dim where Y's dims start; -1 aligns to the end")             \
      .inferShape(inferElementwise)                                                                \
      .grad(gradElementwise<gradType>);                                                            \
  OAR_OP(name##_grad)                                                                              \
      .summary("gradients of " #name)                                                              \
      .input("X", "forward X")                                                                     \
      .input("Y", "forward Y")                                                                     \
      .input("Out@GRAD", "gradient of Out")                                                        \
      .output("X@GRAD", "gradient of X", kOptional)                                                \
      .output("Y@GRAD", "gradient of Y (summed over broadcast dims)", kOptional)                   \
      .sameAttrsAs(OAR_OP_CONCAT(oarOpSchema_, name))                                              \
      .inferShape(inferGradsLikeInputs)                                                            \
      .noGrad(kGradOpReason)

OAR_ELEMENTWISE_OP(elementwise_add, "Out = X + Y", kAddGrad);
OAR_ELEMENTWISE_OP(elementwise_sub, "Out = X - Y", kSubGrad);
OAR_ELEMENTWISE_OP(elementwise_mul, "Out = X * Y", kMulGrad);

} // namespace oar::ops
