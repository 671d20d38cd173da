// conv2d and pool2d over NCHW images.
#include "ops/common.h"

namespace oar::ops {

static int64_t convOutSize(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dilation) {
  if (in < 0)
    return -1;
  return (in + 2 * pad - (dilation * (k - 1) + 1)) / stride + 1;
}

static llvm::Error checkPair(llvm::StringRef name, const std::vector<int64_t> &v, int64_t min) {
  if (v.size() != 2 || v[0] < min || v[1] < min)
    return makeError("{0} {1} must be two values >= {2}", name, dimsString(v), min);
  return llvm::Error::success();
}

static llvm::Error inferConv2d(InferContext &ctx) {
  const VarType &in = ctx.input("Input"), &f = ctx.input("Filter");
  auto strides = ctx.attrs().getInts("strides"), pads = ctx.attrs().getInts("paddings"),
       dil = ctx.attrs().getInts("dilations");
  if (llvm::Error err = checkPair("strides", strides, 1))
    return err;
  if (llvm::Error err = checkPair("paddings", pads, 0))
    return err;
  if (llvm::Error err = checkPair("dilations", dil, 1))
    return err;
  if (ctx.attrs().getInt("groups") != 1)
    return makeError("groups={0} is not supported; use 1", ctx.attrs().getInt("groups"));
  if (in.rank() != 4 || f.rank() != 4 || !dimsAgree(in.dims[1], f.dims[1]) || in.dtype != f.dtype)
    return makeError("{0} and {1}; need Input [N,C,H,W] and Filter [O,C,kh,kw] with equal C",
                     ctx.describe("Input"), ctx.describe("Filter"));
  int64_t oh = convOutSize(in.dims[2], f.dims[2], pads[0], strides[0], dil[0]);
  int64_t ow = convOutSize(in.dims[3], f.dims[3], pads[1], strides[1], dil[1]);
  if ((in.dims[2] >= 0 && oh <= 0) || (in.dims[3] >= 0 && ow <= 0))
    return makeError("{0} is too small for {1}", ctx.describe("Input"), ctx.describe("Filter"));
  ctx.setOutput("Output", makeType(in.dtype, {in.dims[0], f.dims[0], oh, ow}));
  return requireFloat(ctx, "Input");
}

static void gradConv2d(GradBuilder &g) {
  g.addOp("conv2d_grad",
          {{"Input", g.input("Input")},
           {"Filter", g.input("Filter")},
           {"Output@GRAD", g.outputGrad("Output")}},
          {{"Input@GRAD", g.inputGrad("Input")}, {"Filter@GRAD", g.inputGrad("Filter")}});
}

OAR_OP(conv2d)
    .summary("Output = the 2-D cross-correlation of Input with Filter (NCHW)")
    .input("Input", "images [N, C, H, W]")
    .input("Filter", "kernels [O, C, kh, kw]")
    .output("Output", "[N, O, H', W']")
    .attr<std::vector<int64_t>>("strides", {1, 1}, "step in H and W")
    .attr<std::vector<int64_t>>("paddings", {0, 0}, "zero padding in H and W")
    .attr<std::vector<int64_t>>("dilations", {1, 1}, "kernel dilation in H and W")
    .attr<int64_t>("groups", 1, "channel groups (only 1 is supported)")
    .inferShape(inferConv2d)
    .grad(gradConv2d);

OAR_OP(conv2d_grad)
    .summary("gradients of conv2d")
    .input("Input", "forward Input")
    .input("Filter", "forward Filter")
    .input("Output@GRAD", "gradient of Output")
    .output("Input@GRAD", "gradient of Input", kOptional)
    .output("Filter@GRAD", "gradient of Filter", kOptional)
    .sameAttrsAs(oarOpSchema_conv2d)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

static llvm::Error inferPool2d(InferContext &ctx) {
  const VarType &x = ctx.input("X");
  if (x.rank() != 4)
    return makeError("{0}; pool2d needs [N, C, H, W]", ctx.describe("X"));
  std::string type = ctx.attrs().getString("pooling_type");
  if (type != "max" && type != "avg")
    return makeError("pooling_type \"{0}\" must be max or avg", type);
  if (ctx.attrs().getBool("global_pooling")) {
    ctx.setOutput("Out", makeType(x.dtype, {x.dims[0], x.dims[1], 1, 1}));
    return llvm::Error::success();
  }
  auto k = ctx.attrs().getInts("ksize"), s = ctx.attrs().getInts("strides"),
       p = ctx.attrs().getInts("paddings");
  if (llvm::Error err = checkPair("ksize", k, 1))
    return err;
  if (llvm::Error err = checkPair("strides", s, 1))
    return err;
  if (llvm::Error err = checkPair("paddings", p, 0))
    return err;
  int64_t oh = convOutSize(x.dims[2], k[0], p[0], s[0], 1);
  int64_t ow = convOutSize(x.dims[3], k[1], p[1], s[1], 1);
  if ((x.dims[2] >= 0 && oh <= 0) || (x.dims[3] >= 0 && ow <= 0))
    return makeError("{0} is too small for ksize {1}", ctx.describe("X"), dimsString(k));
  ctx.setOutput("Out", makeType(x.dtype, {x.dims[0], x.dims[1], oh, ow}));
  return requireFloat(ctx, "X");
}

static void gradPool2d(GradBuilder &g) {
  g.addOp("pool2d_grad",
          {{"X", g.input("X")}, {"Out", g.output("Out")}, {"Out@GRAD", g.outputGrad("Out")}},
          {{"X@GRAD", g.inputGrad("X")}});
}

OAR_OP(pool2d)
    .summary("Out = max or average over kernel windows (NCHW)")
    .input("X", "images [N, C, H, W]")
    .output("Out", "[N, C, H', W']")
    .attr<std::string>("pooling_type", "max", "max or avg")
    .attr<std::vector<int64_t>>("ksize", {2, 2}, "window size in H and W")
    .attr<std::vector<int64_t>>("strides", {2, 2}, "step in H and W")
    .attr<std::vector<int64_t>>("paddings", {0, 0}, "padding in H and W (not counted in avg)")
    .attr<bool>("global_pooling", false, "pool over the whole image")
    .inferShape(inferPool2d)
    .grad(gradPool2d);

OAR_OP(pool2d_grad)
    .summary("gradient of pool2d")
    .input("X", "forward X")
    .input("Out", "forward Out")
    .input("Out@GRAD", "gradient of Out")
    .output("X@GRAD", "gradient of X")
    .sameAttrsAs(oarOpSchema_pool2d)
    .inferShape(inferGradsLikeInputs)
    .noGrad(kGradOpReason);

} // namespace oar::ops
