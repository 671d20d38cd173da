// Ops that create tensors from attrs: fill_constant, uniform_random, gaussian_random,
// fill_zeros_like. Startup programs are made of these.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferFromShapeAttr(InferContext &ctx) {
  auto shape = ctx.attrs().getInts("shape");
  for (int64_t d : shape)
    if (d < 0)
      return makeError("shape attr {0} has a negative dim", dimsString(shape));
  auto dtype = static_cast<DType>(ctx.attrs().getInt("dtype"));
  if (dtypeSize(dtype) == 0)
    return makeError("dtype attr {0} is not a known dtype", static_cast<int>(dtype));
  ctx.setOutput("Out", makeType(dtype, shape));
  return llvm::Error::success();
}

OAR_OP(fill_constant)
    .summary("Out = a tensor of `shape` filled with `value`")
    .output("Out", "the filled tensor")
    .attr<std::vector<int64_t>>("shape", {}, "dims of Out")
    .attr<int64_t>("dtype", proto::F32, "element type (DType enum value)")
    .attr<float>("value", 0.0f, "the fill value")
    .inferShape(inferFromShapeAttr)
    .noGrad("a constant");

OAR_OP(uniform_random)
    .summary("Out = values drawn uniformly from [min, max) with a fixed seed")
    .output("Out", "the random tensor")
    .attr<std::vector<int64_t>>("shape", {}, "dims of Out")
    .attr<int64_t>("dtype", proto::F32, "element type (DType enum value)")
    .attr<float>("min", -1.0f, "lower bound")
    .attr<float>("max", 1.0f, "upper bound")
    .attr<int64_t>("seed", 0, "random seed; the same seed gives the same numbers everywhere")
    .inferShape(inferFromShapeAttr)
    .noGrad("an initializer");

OAR_OP(gaussian_random)
    .summary("Out = values drawn from N(mean, std^2) with a fixed seed")
    .output("Out", "the random tensor")
    .attr<std::vector<int64_t>>("shape", {}, "dims of Out")
    .attr<int64_t>("dtype", proto::F32, "element type (DType enum value)")
    .attr<float>("mean", 0.0f, "mean")
    .attr<float>("std", 1.0f, "standard deviation")
    .attr<int64_t>("seed", 0, "random seed; the same seed gives the same numbers everywhere")
    .inferShape(inferFromShapeAttr)
    .noGrad("an initializer");

OAR_OP(fill_zeros_like)
    .summary("Out = zeros with X's type (a missing gradient)")
    .input("X", "the tensor whose type to copy")
    .output("Out", "zeros")
    .inferShape(inferSameAsX)
    .noGrad("a constant");

} // namespace oar::ops
