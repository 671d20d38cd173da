// reshape and transpose: layout changes that copy data.
#include "ops/common.h"

namespace oar::ops {

/// Resolves Paddle's reshape shape: 0 copies X's dim, one -1 is inferred.
static llvm::Expected<llvm::SmallVector<int64_t, 4>> resolveShape(const InferContext &ctx) {
  const VarType &x = ctx.input("X");
  auto shape = ctx.attrs().getInts("shape");
  llvm::SmallVector<int64_t, 4> out;
  int inferAt = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == 0) {
      if (i >= x.dims.size())
        return makeError("shape {0} copies dim {1} that {2} lacks", dimsString(shape), i,
                         ctx.describe("X"));
      d = x.dims[i];
    }
    if (d == -1) {
      if (inferAt >= 0)
        return makeError("shape {0} has more than one -1", dimsString(shape));
      inferAt = static_cast<int>(i);
    } else if (d < 0) {
      return makeError("shape {0} has a negative dim", dimsString(shape));
    } else {
      known *= d;
    }
    out.push_back(d);
  }
  int64_t total = dimProduct(x.dims, 0, x.dims.size());
  if (inferAt >= 0) {
    if (total >= 0) {
      if (known == 0 || total % known != 0)
        return makeError("cannot reshape {0} to {1}", ctx.describe("X"), dimsString(shape));
      out[inferAt] = total / known;
    }
  } else if (total >= 0 && total != known) {
    return makeError("cannot reshape {0} ({1} elements) to {2} ({3} elements)", ctx.describe("X"),
                     total, dimsString(shape), known);
  }
  return out;
}

static llvm::Error inferReshape(InferContext &ctx) {
  auto shape = resolveShape(ctx);
  if (!shape)
    return shape.takeError();
  ctx.setOutput("Out", makeType(ctx.input("X").dtype, *shape));
  return llvm::Error::success();
}

static void gradReshape(GradBuilder &g) {
  g.addOp("reshape_grad", {{"X", g.input("X")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(reshape)
    .summary("Out = X with new dims (0 copies a dim of X, one -1 is inferred)")
    .input("X", "input")
    .output("Out", "X's data with the new dims")
    .attr<std::vector<int64_t>>("shape", {}, "the new dims")
    .inferShape(inferReshape)
    .grad(gradReshape);

OAR_OP(reshape_grad)
    .summary("gradient of reshape: Out@GRAD with X's dims")
    .input("X", "forward X (for its dims)")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .sameAttrsAs(oarOpSchema_reshape)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

static llvm::Error inferTranspose(InferContext &ctx) {
  const VarType &x = ctx.input("X");
  auto perm = ctx.attrs().getInts("axis");
  std::vector<bool> seen(x.rank(), false);
  if (static_cast<int64_t>(perm.size()) != x.rank())
    return makeError("axis {0} is not a permutation of {1}'s dims", dimsString(perm),
                     ctx.describe("X"));
  VarType out = x;
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= x.rank() || seen[perm[i]])
      return makeError("axis {0} is not a permutation of {1}'s dims", dimsString(perm),
                       ctx.describe("X"));
    seen[perm[i]] = true;
    out.dims[i] = x.dims[perm[i]];
  }
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

// The gradient is the inverse permutation.
static void gradTranspose(GradBuilder &g) {
  auto perm = g.attrs().getInts("axis");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = static_cast<int64_t>(i);
  g.addPlainOp("transpose", {{"X", g.outputGrad("Out")}}, {{"Out", g.inputGrad("X")}},
               {{"axis", inverse}});
}

OAR_OP(transpose)
    .summary("Out = X with dims permuted: Out.dims[i] = X.dims[axis[i]]")
    .input("X", "input")
    .output("Out", "the permuted tensor")
    .attr<std::vector<int64_t>>("axis", {}, "the permutation")
    .inferShape(inferTranspose)
    .grad(gradTranspose);

} // namespace oar::ops
