// mul: Out = flatten(X) * flatten(Y), the matrix product behind fc layers.
#include "ops/common.h"

namespace oar::ops {

// X is flattened to [prod(dims[:xn]), prod(dims[xn:])], Y likewise with yn.
static llvm::Error inferMul(InferContext &ctx) {
  const VarType &x = ctx.input("X"), &y = ctx.input("Y");
  int64_t xn = ctx.attrs().getInt("x_num_col_dims"), yn = ctx.attrs().getInt("y_num_col_dims");
  if (xn < 1 || xn >= x.rank() || yn < 1 || yn >= y.rank())
    return makeError("x_num_col_dims={0} and y_num_col_dims={1} must be in [1, rank); {2}, {3}", xn,
                     yn, ctx.describe("X"), ctx.describe("Y"));
  if (x.dtype != y.dtype)
    return makeError("{0} but {1}; dtypes must match", ctx.describe("X"), ctx.describe("Y"));
  int64_t xCols = dimProduct(x.dims, xn, x.rank()), yRows = dimProduct(y.dims, 0, yn);
  if (!dimsAgree(xCols, yRows))
    return makeError("{0} but {1}; X's columns ({2}) must equal Y's rows ({3})", ctx.describe("X"),
                     ctx.describe("Y"), xCols, yRows);
  VarType out;
  out.dtype = x.dtype;
  out.dims.append(x.dims.begin(), x.dims.begin() + xn);
  out.dims.append(y.dims.begin() + yn, y.dims.end());
  ctx.setOutput("Out", out);
  return requireFloat(ctx, "X");
}

static void gradMul(GradBuilder &g) {
  g.addOp("mul_grad", {{"X", g.input("X")}, {"Y", g.input("Y")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}, {"Y@GRAD", g.inputGrad("Y")}});
}

OAR_OP(mul)
    .summary("Out = X * Y after flattening X and Y to matrices")
    .input("X", "left operand")
    .input("Y", "right operand (a weight)")
    .output("Out", "X's leading dims followed by Y's trailing dims")
    .attr<int64_t>("x_num_col_dims", 1, "X's dims before this index form the rows")
    .attr<int64_t>("y_num_col_dims", 1, "Y's dims before this index form the rows")
    .inferShape(inferMul)
    .grad(gradMul);

OAR_OP(mul_grad)
    .summary("gradients of mul")
    .input("X", "forward X")
    .input("Y", "forward Y")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X", kOptional)
    .output("Y@GRAD", "gradient of Y", kOptional)
    .sameAttrsAs(oarOpSchema_mul)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

} // namespace oar::ops
