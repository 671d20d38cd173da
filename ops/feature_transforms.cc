// The schema's transforms as ops, for programs that take raw columns: log1p, bucketize,
// feature_key and feature_cross give what the feeds give (feed/transforms.h, feed/feature_key.h), so a model fed
// raw values online and one trained on a feed offline see the same inputs.
#include <cmath>
#include <sstream>

#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferLog1p(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  return inferSameAsX(ctx);
}

static void gradLog1p(GradBuilder &g) {
  g.addOp("log1p_grad", {{"X", g.input("X")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

static llvm::Error inferLog1pGrad(InferContext &ctx) {
  ctx.setOutput("X@GRAD", ctx.input("X"));
  return llvm::Error::success();
}

OAR_OP(log1p)
    .summary("Out = sign(X) * log(1 + |X|): a count or a price on a log scale, sign kept (the "
             "schema's log1p)")
    .input("X", "f32 or f64 values")
    .output("Out", "X's shape")
    .inferShape(inferLog1p)
    .grad(gradLog1p);

OAR_OP(log1p_grad)
    .summary("gradient of log1p: X@GRAD = Out@GRAD / (1 + |X|)")
    .input("X", "forward X")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .inferShape(inferLog1pGrad)
    .noGrad(kGradOpReason);

/// A boundary as written: 2 and 0.25, not 2.00 and 0.25.
static std::string shortText(float v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

static llvm::Error inferBucketize(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  std::vector<float> b = ctx.attrs().getFloats("boundaries");
  for (size_t i = 1; i < b.size(); ++i)
    if (!(b[i - 1] < b[i]))
      return makeError("boundaries {0} and {1} (at {2} and {3}) are not ascending",
                       shortText(b[i - 1]), shortText(b[i]), i - 1, i);
  for (float v : b)
    if (!std::isfinite(v))
      return makeError("boundary {0} is not finite", shortText(v));
  ctx.setOutput("Out", makeType(proto::I64, ctx.input("X").dims));
  return llvm::Error::success();
}

OAR_OP(bucketize)
    .summary("Out = the bucket of X: i for X < boundaries[i] (the first such i), n past the last "
             "(the schema's bucketize; TensorFlow's bucketized_column)")
    .input("X", "f32 or f64 values")
    .output("Out", "i64 buckets in [0, n], shaped as X")
    .attr<std::vector<float>>("boundaries", {}, "ascending, finite")
    .inferShape(inferBucketize)
    .noGrad("integer buckets");

static llvm::Error inferFeatureKey(InferContext &ctx) {
  const VarType &x = ctx.input("X");
  if (x.dtype != proto::I64)
    return makeError("{0}; feature_key hashes i64 ids (bucketize makes them from numbers)",
                     ctx.describe("X"));
  if (ctx.attrs().getString("column").empty())
    return makeError("column is empty; keys are hashed with their column's name");
  ctx.setOutput("Out", x);
  return llvm::Error::success();
}

OAR_OP(feature_key)
    .summary("Out = the key a schema feed gives the integer X in the named column (a 63-bit "
             "hash of the column and X's decimal text), ready for id_mod or a distributed table")
    .input("X", "i64 ids")
    .output("Out", "i64 keys >= 0, shaped as X")
    .attr<std::string>("column", "", "the column's name in the schema")
    .inferShape(inferFeatureKey)
    .noGrad("integer keys");

static llvm::Error inferFeatureCross(InferContext &ctx) {
  if (ctx.attrs().getString("column").empty())
    return makeError("column is empty; a cross's keys are hashed with its name (as \"a*b\")");
  if (ctx.inputCount("X") < 2)
    return makeError("feature_cross crosses two or more key tensors, got {0}", ctx.inputCount("X"));
  VarType out = ctx.input("X", 0);
  int64_t wide = -1; // the one input with more than a key a row, if any
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    const VarType &x = ctx.input("X", i);
    if (x.dtype != proto::I64 || x.rank() != 2)
      return makeError("{0}; feature_cross takes i64 keys [B, N]", ctx.describe("X", i));
    if (x.dims[1] == 1)
      continue;
    if (wide >= 0)
      return makeError("{0} and {1} both have several keys a row; at most one input may (a "
                       "multi-valued column)",
                       ctx.describe("X", wide), ctx.describe("X", i));
    wide = static_cast<int64_t>(i);
    out = x;
  }
  ctx.setOutput("Out", out);
  return llvm::Error::success();
}

OAR_OP(feature_cross)
    .summary("Out = the keys a schema feed gives the cross named `column` of its columns' keys X "
             "(in order): one per row, or one per value of the one input with several a row")
    .input("X", "i64 keys [B, 1], at most one [B, N]", kDuplicable)
    .output("Out", "i64 keys >= 0 [B, N]")
    .attr<std::string>("column", "", "the cross's name in the schema (\"a*b\")")
    .inferShape(inferFeatureCross)
    .noGrad("integer keys");

} // namespace oar::ops
