// Parameter update ops: sgd, momentum, adam, adamw, adagrad. Each updates in place
// (ParamOut names the same var as Param); the learning rate is a [1] tensor.
// The update rules are exactly those in test/fixtures/README.md. Every one takes L2 weight decay
// (adamw: decoupled) and a learning-rate schedule over its own update counter (Step), so both
// run wherever the update runs, on a pserver's block of the param as on one machine.
#include "ops/common.h"

namespace oar::ops {

static llvm::Error checkParamLike(InferContext &ctx, llvm::StringRef slot) {
  const VarType &p = ctx.input("Param"), &t = ctx.input(slot);
  if (p.dtype != t.dtype || p.dims != t.dims)
    return makeError("{0} but {1}; they must have the same type", ctx.describe("Param"),
                     ctx.describe(slot));
  return llvm::Error::success();
}

static llvm::Error checkScalar(InferContext &ctx, llvm::StringRef slot) {
  const VarType &t = ctx.input(slot);
  if (numElements(t.dims) != 1 || t.dtype != ctx.input("Param").dtype)
    return makeError("{0}; it must be one element of Param's dtype", ctx.describe(slot));
  return llvm::Error::success();
}

static llvm::Error inferSchedule(InferContext &ctx);

// Checks each (input slot, output slot) pair in `state`, then gives outputs their inputs' types.
static llvm::Error inferUpdate(InferContext &ctx,
                               llvm::ArrayRef<std::pair<const char *, const char *>> state,
                               llvm::ArrayRef<std::pair<const char *, const char *>> scalars) {
  if (llvm::Error err = requireFloat(ctx, "Param"))
    return err;
  if (llvm::Error err = checkParamLike(ctx, "Grad"))
    return err;
  if (llvm::Error err = checkScalar(ctx, "LearningRate"))
    return err;
  if (llvm::Error err = inferSchedule(ctx))
    return err;
  ctx.setOutput("ParamOut", ctx.input("Param"));
  for (auto [in, out] : state) {
    if (llvm::Error err = checkParamLike(ctx, in))
      return err;
    ctx.setOutput(out, ctx.input(in));
  }
  for (auto [in, out] : scalars) {
    if (llvm::Error err = checkScalar(ctx, in))
      return err;
    ctx.setOutput(out, ctx.input(in));
  }
  return llvm::Error::success();
}

// One value per row of Param: [rows] of Param's dtype.
static llvm::Error checkPerRow(InferContext &ctx, llvm::StringRef slot, llvm::StringRef why) {
  const VarType &p = ctx.input("Param"), &t = ctx.input(slot);
  if (p.rank() < 1 || t.dtype != p.dtype || t.rank() != 1 || !dimsAgree(t.dims[0], p.dims[0]))
    return makeError("{0} but {1}; {2} needs one value per row of Param: {3}[{4}]",
                     ctx.describe("Param"), ctx.describe(slot), why, dtypeName(p.dtype),
                     p.rank() ? p.dims[0] : 0);
  return llvm::Error::success();
}

static const char *const kSchedules[] = {"constant", "step", "exponential", "cosine"};

// The schedule's attrs, and its counter: Step is [1] of Param's dtype (a pserver keeps it with
// the param's other per-block state), needed whenever the rate changes over time.
static llvm::Error inferSchedule(InferContext &ctx) {
  const AttrReader &a = ctx.attrs();
  std::string type = a.getString("lr_schedule");
  if (!llvm::is_contained(kSchedules, type))
    return makeError("lr_schedule \"{0}\" is unknown (use constant, step, exponential or cosine)",
                     type);
  if (a.getInt("warmup_steps") < 0)
    return makeError("warmup_steps is {0}; it must be 0 or more", a.getInt("warmup_steps"));
  if ((type == "step" || type == "exponential") && !(a.getFloat("lr_decay_rate") > 0))
    return makeError("lr_schedule {0} needs lr_decay_rate > 0, got {1}", type,
                     a.getFloat("lr_decay_rate"));
  if (type != "constant" && a.getInt("lr_decay_steps") <= 0)
    return makeError("lr_schedule {0} needs lr_decay_steps > 0, got {1}", type,
                     a.getInt("lr_decay_steps"));
  if (!(a.getFloat("weight_decay") >= 0))
    return makeError("weight_decay is {0}; it must be 0 or more", a.getFloat("weight_decay"));
  bool scheduled = type != "constant" || a.getInt("warmup_steps") > 0;
  if (!ctx.hasInput("Step")) {
    if (scheduled)
      return makeError("lr_schedule {0} with warmup_steps {1} needs the Step input (the update "
                       "counter)",
                       type, a.getInt("warmup_steps"));
    return llvm::Error::success();
  }
  if (llvm::Error err = checkScalar(ctx, "Step"))
    return err;
  // A counter that is read but not written back would hold the rate where it started.
  if (!ctx.hasOutput("StepOut") || opOutputs(ctx.op(), "StepOut") != opInputs(ctx.op(), "Step"))
    return makeError("{0}: StepOut must name the same var, which each update advances",
                     ctx.describe("Step"));
  ctx.setOutput("StepOut", ctx.input("Step"));
  return llvm::Error::success();
}

static llvm::Error inferSgd(InferContext &ctx) { return inferUpdate(ctx, {}, {}); }
static llvm::Error inferMomentum(InferContext &ctx) {
  return inferUpdate(ctx, {{"Velocity", "VelocityOut"}}, {});
}
static llvm::Error inferAdam(InferContext &ctx) {
  if (!ctx.input("Grad").isRows())
    return inferUpdate(ctx, {{"Moment1", "Moment1Out"}, {"Moment2", "Moment2Out"}},
                       {{"Beta1Pow", "Beta1PowOut"}, {"Beta2Pow", "Beta2PowOut"}});
  // Lazy Adam: a row's bias correction counts the steps that touched it. Each row keeps its own
  // beta1^t and beta2^t (rather than a step count) because they advance by the same multiply as
  // the dense [1] powers: a row touched every step gets dense Adam's bits, no pow() per row.
  if (llvm::Error err =
          inferUpdate(ctx, {{"Moment1", "Moment1Out"}, {"Moment2", "Moment2Out"}}, {}))
    return err;
  const std::pair<const char *, const char *> powers[] = {{"Beta1Pow", "Beta1PowOut"},
                                                          {"Beta2Pow", "Beta2PowOut"}};
  for (auto [in, out] : powers) {
    if (llvm::Error err = checkPerRow(ctx, in, "lazy Adam (Grad is selected rows)"))
      return err;
    ctx.setOutput(out, ctx.input(in));
  }
  return llvm::Error::success();
}
static llvm::Error inferAdagrad(InferContext &ctx) {
  if (!ctx.attrs().getBool("row_wise"))
    return inferUpdate(ctx, {{"Moment", "MomentOut"}}, {});
  if (llvm::Error err = inferUpdate(ctx, {}, {}))
    return err;
  if (llvm::Error err = checkPerRow(ctx, "Moment", "row_wise adagrad"))
    return err;
  ctx.setOutput("MomentOut", ctx.input("Moment"));
  return llvm::Error::success();
}

// The schedule's slots and attrs, which every optimizer takes.
static void schedule(OpSchema &s) {
  s.input("Step", "[1] updates made before this one, starts at 0 (needed with a schedule)",
          kOptional)
      .output("StepOut", "Step + 1 (same var as Step)", kOptional)
      .attr<std::string>("lr_schedule", "constant",
                         "constant | step (lr * rate^floor(u/N)) | exponential (lr * rate^(u/N)) "
                         "| cosine (lr * (1 + cos(pi * min(u, N) / N)) / 2), u = Step - "
                         "warmup_steps, N = lr_decay_steps")
      .attr<int64_t>("warmup_steps", 0, "lr * (Step + 1) / W for the first W updates")
      .attr<int64_t>("lr_decay_steps", 1, "N of the schedule")
      .attr<float>("lr_decay_rate", 1.0f, "rate of step and exponential");
}
// L2 decay (added to the gradient, after any clipping) and the schedule.
static void decayAndSchedule(OpSchema &s) {
  schedule(s);
  s.attr<float>("weight_decay", 0.0f,
                "L2 decay: Grad + weight_decay * Param (a selected-rows "
                "Grad: its rows only)");
}

OAR_OP(sgd)
    .summary("ParamOut = Param - LearningRate * Grad (selected rows: only their rows)")
    .input("Param", "parameter")
    .input("Grad", "its gradient; selected rows update only the rows they hold", kSelectedRows)
    .input("LearningRate", "[1] learning rate")
    .output("ParamOut", "updated parameter (same var as Param)")
    .with(decayAndSchedule)
    .inferShape(inferSgd)
    .noGrad("an optimizer update");

OAR_OP(momentum)
    .summary("v = mu*v + g; p -= lr*v (Nesterov: p -= lr*(g + mu*v))")
    .input("Param", "parameter")
    .input("Grad", "its gradient")
    .input("Velocity", "velocity accumulator, starts at 0")
    .input("LearningRate", "[1] learning rate")
    .output("ParamOut", "updated parameter")
    .output("VelocityOut", "updated velocity")
    .attr<float>("mu", 0.9f, "momentum factor")
    .attr<bool>("use_nesterov", false, "Nesterov momentum")
    .with(decayAndSchedule)
    .inferShape(inferMomentum)
    .noGrad("an optimizer update");

// Adam's slots and attrs, shared by adam and adamw.
static void adamSlots(OpSchema &s) {
  s.input("Param", "parameter")
      .input("Grad", "its gradient; selected rows make the update lazy", kSelectedRows)
      .input("LearningRate", "[1] learning rate")
      .input("Moment1", "first moment, starts at 0")
      .input("Moment2", "second moment, starts at 0")
      .input("Beta1Pow", "[1] beta1^t, starts at beta1; [rows] (one per row) when lazy")
      .input("Beta2Pow", "[1] beta2^t, starts at beta2; [rows] (one per row) when lazy")
      .output("ParamOut", "updated parameter")
      .output("Moment1Out", "updated first moment")
      .output("Moment2Out", "updated second moment")
      .output("Beta1PowOut", "beta1^(t+1)")
      .output("Beta2PowOut", "beta2^(t+1)")
      .attr<float>("beta1", 0.9f, "first moment decay")
      .attr<float>("beta2", 0.999f, "second moment decay")
      .attr<float>("epsilon", 1e-8f, "added to the denominator");
}

OAR_OP(adam)
    .summary("Adam with bias correction; Beta1Pow/Beta2Pow hold beta^t and advance each step. "
             "Lazy with a selected-rows Grad: only its rows (duplicates summed) change, each "
             "with its own beta^t, advanced when the row is touched")
    .with(adamSlots)
    .with(decayAndSchedule)
    .inferShape(inferAdam)
    .noGrad("an optimizer update");

OAR_OP(adamw)
    .summary("Adam with decoupled weight decay (torch.optim.AdamW): Param -= lr * weight_decay * "
             "Param, then adam's step without L2 decay. "
             "Lazy with a selected-rows Grad: only its rows (duplicates summed) change, each "
             "with its own beta^t, advanced when the row is touched")
    .with(adamSlots)
    .with(schedule)
    .attr<float>("weight_decay", 0.01f, "decoupled decay: Param -= lr * weight_decay * Param first")
    .inferShape(inferAdam)
    .noGrad("an optimizer update");

OAR_OP(adagrad)
    .summary("s += g^2; p -= lr * g / (sqrt(s) + epsilon). row_wise: one s per row, s[r] += "
             "mean(g[r]^2). A selected-rows Grad updates only its rows (duplicates summed)")
    .input("Param", "parameter")
    .input("Grad", "its gradient; selected rows update only the rows they hold", kSelectedRows)
    .input("Moment", "sum of squared gradients, starts at 0; [rows] with row_wise")
    .input("LearningRate", "[1] learning rate")
    .output("ParamOut", "updated parameter")
    .output("MomentOut", "updated sum")
    .attr<float>("epsilon", 1e-6f, "added to the denominator")
    .attr<bool>("row_wise", false,
                "keep one accumulator per row of Param (the mean of the row's squared gradient)")
    .with(decayAndSchedule)
    .inferShape(inferAdagrad)
    .noGrad("an optimizer update");

} // namespace oar::ops
