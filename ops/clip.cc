// clip_by_global_norm: every gradient scaled by min(1, max_norm / (||all||+1e-6)), the norm
// taken over all of them together (torch.nn.utils.clip_grad_norm_). Appended after backward.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error inferClipByGlobalNorm(InferContext &ctx) {
  float maxNorm = ctx.attrs().getFloat("max_norm");
  if (!(maxNorm > 0) || !std::isfinite(maxNorm))
    return makeError("max_norm is {0}; it must be positive and finite", maxNorm);
  if (ctx.inputCount("X") != ctx.outputCount("Out"))
    return makeError("{0} inputs but {1} outputs; each gradient X is clipped into its Out",
                     ctx.inputCount("X"), ctx.outputCount("Out"));
  for (size_t i = 0; i < ctx.inputCount("X"); ++i) {
    if (llvm::Error err = requireFloat(ctx, "X"))
      return err;
    if (ctx.input("X", i).dtype != ctx.input("X", 0).dtype)
      return makeError("{0} but {1}; all gradients clipped together share a dtype",
                       ctx.describe("X", 0), ctx.describe("X", i));
    ctx.setOutput("Out", ctx.input("X", i), i);
  }
  return llvm::Error::success();
}

OAR_OP(clip_by_global_norm)
    .summary("Out_i = X_i * min(1, max_norm / (sqrt(sum_i sum X_i^2) + 1e-6)), the norm over "
             "every X together")
    .input("X", "dense gradients", kDuplicable)
    .output("Out", "clipped gradients (normally the same vars as X)", kDuplicable)
    .attr<float>("max_norm", 1.0f, "the largest global norm let through")
    .inferShape(inferClipByGlobalNorm)
    .noGrad("it rescales gradients after backward");

} // namespace oar::ops
