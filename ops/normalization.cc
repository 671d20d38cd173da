// Normalisation layers: batch_norm (statistics per channel over the batch) and layer_norm
// (statistics per row over the last dim), each with a learned scale and shift.
#include "ops/common.h"

namespace oar::ops {

/// A [C] input of X's dtype, C being `channels`.
static llvm::Error checkPerChannel(InferContext &ctx, llvm::StringRef slot, int64_t channels,
                                   llvm::StringRef what) {
  const VarType &t = ctx.input(slot);
  if (t.dtype != ctx.input("X").dtype || t.rank() != 1 || !dimsAgree(t.dims[0], channels))
    return makeError("{0} but {1}; it must hold one value per {2}: {3}[{4}]", ctx.describe("X"),
                     ctx.describe(slot), what, dtypeName(ctx.input("X").dtype), channels);
  return llvm::Error::success();
}

// The gradients of X, Scale and of Bias (shaped like Scale, which the grad op reads instead).
static llvm::Error inferNormGrad(InferContext &ctx) {
  if (ctx.hasOutput("X@GRAD"))
    ctx.setOutput("X@GRAD", ctx.input("X"));
  for (const char *slot : {"Scale@GRAD", "Bias@GRAD"})
    if (ctx.hasOutput(slot))
      ctx.setOutput(slot, ctx.input("Scale"));
  return llvm::Error::success();
}

// batch_norm: X is [N, C] or [N, C, ...] (NCHW); statistics per channel over every other dim.
static llvm::Error inferBatchNorm(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  const VarType &x = ctx.input("X");
  if (x.rank() < 2)
    return makeError("{0}; batch_norm needs [batch, channels, ...]", ctx.describe("X"));
  for (const char *slot : {"Scale", "Bias", "Mean", "Variance"})
    if (llvm::Error err = checkPerChannel(ctx, slot, x.dims[1], "channel (dim 1 of X)"))
      return err;
  VarType perChannel = ctx.input("Mean");
  ctx.setOutput("Y", x);
  ctx.setOutput("MeanOut", perChannel);
  ctx.setOutput("VarianceOut", perChannel);
  ctx.setOutput("SavedMean", perChannel);
  ctx.setOutput("SavedInvStd", perChannel);
  return llvm::Error::success();
}

static void gradBatchNorm(GradBuilder &g) {
  g.addOp("batch_norm_grad",
          {{"X", g.input("X")},
           {"Scale", g.input("Scale")},
           {"SavedMean", g.output("SavedMean")},
           {"SavedInvStd", g.output("SavedInvStd")},
           {"Y@GRAD", g.outputGrad("Y")}},
          {{"X@GRAD", g.inputGrad("X")},
           {"Scale@GRAD", g.inputGrad("Scale")},
           {"Bias@GRAD", g.inputGrad("Bias")}});
}

OAR_OP(batch_norm)
    .summary("Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias per channel (dim 1). Training: "
             "the batch's mean and biased variance, and the running Mean/Variance move to "
             "momentum * running + (1 - momentum) * batch (the batch's unbiased variance); "
             "is_test: the running ones")
    .input("X", "[batch, channels, ...]")
    .input("Scale", "[channels] scale, starts at 1")
    .input("Bias", "[channels] shift, starts at 0")
    .input("Mean", "[channels] running mean, starts at 0 (not trained)")
    .input("Variance", "[channels] running variance, starts at 1 (not trained)")
    .output("Y", "X's shape")
    .output("MeanOut", "updated running mean (same var as Mean)")
    .output("VarianceOut", "updated running variance (same var as Variance)")
    .output("SavedMean", "[channels] the mean Y was normalised with, for the gradient")
    .output("SavedInvStd", "[channels] 1 / sqrt(variance + epsilon) Y was normalised with")
    .attr<float>("momentum", 0.9f,
                 "weight of the running statistics (Paddle's; PyTorch's momentum 0.1 is 0.9 here)")
    .attr<float>("epsilon", 1e-5f, "added to the variance")
    .attr<bool>("is_test", false,
                "normalise with the running statistics and leave them as they are")
    .inferShape(inferBatchNorm)
    .grad(gradBatchNorm);

OAR_OP(batch_norm_grad)
    .summary("gradient of batch_norm in training (the batch's statistics)")
    .sameAttrsAs(oarOpSchema_batch_norm)
    .input("X", "forward X")
    .input("Scale", "forward Scale")
    .input("SavedMean", "forward SavedMean")
    .input("SavedInvStd", "forward SavedInvStd")
    .input("Y@GRAD", "gradient of Y")
    .output("X@GRAD", "gradient of X", kOptional)
    .output("Scale@GRAD", "gradient of Scale", kOptional)
    .output("Bias@GRAD", "gradient of Bias", kOptional)
    .inferShape(inferNormGrad)
    .noGrad(kGradOpReason);

// layer_norm: each row of X (every dim but the last) normalised over the last dim.
static llvm::Error inferLayerNorm(InferContext &ctx) {
  if (llvm::Error err = requireFloat(ctx, "X"))
    return err;
  const VarType &x = ctx.input("X");
  if (x.rank() < 2)
    return makeError("{0}; layer_norm needs [rows..., features]", ctx.describe("X"));
  for (const char *slot : {"Scale", "Bias"})
    if (llvm::Error err = checkPerChannel(ctx, slot, x.dims.back(), "feature (last dim of X)"))
      return err;
  ctx.setOutput("Y", x);
  VarType perRow = makeType(x.dtype, {dimProduct(x.dims, 0, x.dims.size() - 1)});
  ctx.setOutput("Mean", perRow);
  ctx.setOutput("InvStd", perRow);
  return llvm::Error::success();
}

static void gradLayerNorm(GradBuilder &g) {
  g.addOp("layer_norm_grad",
          {{"X", g.input("X")},
           {"Scale", g.input("Scale")},
           {"Mean", g.output("Mean")},
           {"InvStd", g.output("InvStd")},
           {"Y@GRAD", g.outputGrad("Y")}},
          {{"X@GRAD", g.inputGrad("X")},
           {"Scale@GRAD", g.inputGrad("Scale")},
           {"Bias@GRAD", g.inputGrad("Bias")}});
}

OAR_OP(layer_norm)
    .summary("Y = (X - mean) / sqrt(var + epsilon) * Scale + Bias, the mean and biased variance "
             "of each row over the last dim")
    .input("X", "[rows..., features]")
    .input("Scale", "[features] scale, starts at 1")
    .input("Bias", "[features] shift, starts at 0")
    .output("Y", "X's shape")
    .output("Mean", "[rows] each row's mean, for the gradient")
    .output("InvStd", "[rows] each row's 1 / sqrt(variance + epsilon), for the gradient")
    .attr<float>("epsilon", 1e-5f, "added to the variance")
    .inferShape(inferLayerNorm)
    .grad(gradLayerNorm);

OAR_OP(layer_norm_grad)
    .summary("gradient of layer_norm")
    .sameAttrsAs(oarOpSchema_layer_norm)
    .input("X", "forward X")
    .input("Scale", "forward Scale")
    .input("Mean", "forward Mean")
    .input("InvStd", "forward InvStd")
    .input("Y@GRAD", "gradient of Y")
    .output("X@GRAD", "gradient of X", kOptional)
    .output("Scale@GRAD", "gradient of Scale", kOptional)
    .output("Bias@GRAD", "gradient of Bias", kOptional)
    .inferShape(inferNormGrad)
    .noGrad(kGradOpReason);

} // namespace oar::ops
