// concat and split along an axis; each is the other's gradient.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferConcat(InferContext &ctx) {
  VarType out = ctx.input("X", 0);
  int64_t axis = ctx.attrs().getInt("axis");
  if (axis < 0)
    axis += out.rank();
  if (axis < 0 || axis >= out.rank())
    return makeError("axis {0} is out of range for {1}", ctx.attrs().getInt("axis"),
                     ctx.describe("X", 0));
  for (size_t i = 1; i < ctx.inputCount("X"); ++i) {
    const VarType &t = ctx.input("X", i);
    bool same = t.dtype == out.dtype && t.rank() == out.rank();
    for (int64_t d = 0; same && d < t.rank(); ++d)
      same = d == axis || dimsAgree(t.dims[d], out.dims[d]);
    if (!same)
      return makeError("{0} but {1}; inputs may differ only along axis {2}", ctx.describe("X", 0),
                       ctx.describe("X", i), axis);
    out.dims[axis] = (out.dims[axis] < 0 || t.dims[axis] < 0) ? -1 : out.dims[axis] + t.dims[axis];
  }
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

static void gradConcat(GradBuilder &g) {
  g.addOp("concat_grad", {{"X", g.input("X")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(concat)
    .summary("Out = X[0], X[1], ... joined along `axis`")
    .input("X", "tensors that agree except along axis", kDuplicable)
    .output("Out", "the joined tensor")
    .attr<int64_t>("axis", 0, "the dim to join along")
    .inferShape(inferConcat)
    .grad(gradConcat);

OAR_OP(concat_grad)
    .summary("gradient of concat: Out@GRAD cut back into X's pieces")
    .input("X", "forward X (for their sizes)", kDuplicable)
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradients of X", kDuplicable)
    .sameAttrsAs(oarOpSchema_concat)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

static llvm::Error inferSplit(InferContext &ctx) {
  const VarType &x = ctx.input("X");
  int64_t axis = ctx.attrs().getInt("axis");
  if (axis < 0)
    axis += x.rank();
  if (axis < 0 || axis >= x.rank())
    return makeError("axis {0} is out of range for {1}", ctx.attrs().getInt("axis"),
                     ctx.describe("X"));
  auto sections = ctx.attrs().getInts("sections");
  size_t n = ctx.outputCount("Out");
  if (sections.empty()) {
    if (x.dims[axis] >= 0 && x.dims[axis] % static_cast<int64_t>(n) != 0)
      return makeError("{0} cannot be split into {1} equal parts along axis {2}", ctx.describe("X"),
                       n, axis);
    sections.assign(n, x.dims[axis] < 0 ? -1 : x.dims[axis] / static_cast<int64_t>(n));
  }
  if (sections.size() != n)
    return makeError("sections has {0} entries but there are {1} outputs", sections.size(), n);
  int64_t total = 0;
  for (int64_t s : sections)
    total += s;
  if (x.dims[axis] >= 0 && total != x.dims[axis])
    return makeError("sections {0} add up to {1} but {2} has {3} along axis {4}",
                     dimsString(sections), total, ctx.describe("X"), x.dims[axis], axis);
  for (size_t i = 0; i < n; ++i) {
    VarType part = x;
    part.dims[axis] = sections[i];
    ctx.setOutput("Out", part, i);
  }
  return llvm::Error::success();
}

static void gradSplit(GradBuilder &g) {
  g.addPlainOp("concat", {{"X", g.outputGrad("Out")}}, {{"Out", g.inputGrad("X")}},
               {{"axis", g.attr("axis")}});
}

OAR_OP(split)
    .summary("Out[i] = the i-th piece of X along `axis`")
    .input("X", "tensor to cut")
    .output("Out", "the pieces; outputs named @EMPTY@ are skipped", kDuplicable)
    .attr<int64_t>("axis", 0, "the dim to cut along")
    .attr<std::vector<int64_t>>("sections", {}, "piece sizes; empty: equal pieces")
    .inferShape(inferSplit)
    .grad(gradSplit);

OAR_OP(split_byref)
    .summary("Out[i] = the i-th row block of X (the transpiler's cut of a gradient)")
    .input("X", "tensor to cut along dim 0")
    .output("Out", "the row blocks", kDuplicable)
    .sameAttrsAs(oarOpSchema_split)
    .inferShape(inferSplit)
    .noGrad("communication plumbing");

} // namespace oar::ops
