// sum: Out = X[0] + X[1] + ... (also how autodiff adds gradients of a shared var).
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferSum(InferContext &ctx) {
  VarType out = ctx.input("X", 0);
  const VarType &first = out;
  for (size_t i = 1; i < ctx.inputCount("X"); ++i) {
    const VarType &t = ctx.input("X", i);
    bool same = t.dtype == first.dtype && t.rank() == first.rank();
    for (int64_t d = 0; same && d < t.rank(); ++d)
      same = dimsAgree(t.dims[d], first.dims[d]);
    if (!same)
      return makeError("{0} but {1}; all inputs must have one shape", ctx.describe("X", 0),
                       ctx.describe("X", i));
    if (!t.isRows())
      out.kind = proto::DENSE_TENSOR; // any dense input makes the sum dense
  }
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

// Every input gets Out's gradient unchanged.
static void gradSum(GradBuilder &g) {
  auto grads = g.inputGrad("X");
  for (const std::string &grad : grads)
    if (grad != kEmptyVarName)
      g.addPlainOp("scale", {{"X", g.outputGrad("Out")}}, {{"Out", {grad}}}, {{"scale", 1.0f}});
}

OAR_OP(sum)
    .summary("Out = the element-wise sum of all X")
    .input("X", "tensors of one shape; selected rows too", kDuplicable | kSelectedRows)
    .output("Out", "their sum: selected rows (every X's rows, one after another) when every X "
                   "is selected rows, else dense")
    .inferShape(inferSum)
    .grad(gradSum);

} // namespace oar::ops
