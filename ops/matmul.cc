// matmul: Out = alpha * op(X) * op(Y) for matrices or equal-sized batches of them.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferMatmul(InferContext &ctx) {
  const VarType &x = ctx.input("X"), &y = ctx.input("Y");
  bool tx = ctx.attrs().getBool("transpose_X"), ty = ctx.attrs().getBool("transpose_Y");
  if (x.rank() < 2 || x.rank() != y.rank())
    return makeError("{0} and {1}; both must have the same rank >= 2", ctx.describe("X"),
                     ctx.describe("Y"));
  size_t r = x.rank();
  for (size_t i = 0; i + 2 < r; ++i)
    if (!dimsAgree(x.dims[i], y.dims[i]))
      return makeError("{0} and {1}; batch dims must match", ctx.describe("X"), ctx.describe("Y"));
  int64_t m = tx ? x.dims[r - 1] : x.dims[r - 2], k = tx ? x.dims[r - 2] : x.dims[r - 1];
  int64_t k2 = ty ? y.dims[r - 1] : y.dims[r - 2], n = ty ? y.dims[r - 2] : y.dims[r - 1];
  if (!dimsAgree(k, k2))
    return makeError("{0} but {1}; inner dims {2} and {3} must match", ctx.describe("X"),
                     ctx.describe("Y"), k, k2);
  VarType out = x;
  out.dims[r - 2] = m;
  out.dims[r - 1] = n;
  ctx.setOutput("Out", out);
  return requireFloat(ctx, "X");
}

static void gradMatmul(GradBuilder &g) {
  g.addOp("matmul_grad",
          {{"X", g.input("X")}, {"Y", g.input("Y")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}, {"Y@GRAD", g.inputGrad("Y")}});
}

OAR_OP(matmul)
    .summary("Out = alpha * op(X) * op(Y), batched over leading dims")
    .input("X", "left operand")
    .input("Y", "right operand")
    .output("Out", "the product")
    .attr<bool>("transpose_X", false, "use X's transpose")
    .attr<bool>("transpose_Y", false, "use Y's transpose")
    .attr<float>("alpha", 1.0f, "scale of the product")
    .inferShape(inferMatmul)
    .grad(gradMatmul);

OAR_OP(matmul_grad)
    .summary("gradients of matmul")
    .input("X", "forward X")
    .input("Y", "forward Y")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X", kOptional)
    .output("Y@GRAD", "gradient of Y", kOptional)
    .sameAttrsAs(oarOpSchema_matmul)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

} // namespace oar::ops
