// The learning rate and weight decay of one CPU optimizer update.
#pragma once

#include "executor/kernel.h"
#include "kernels/update_rate.h"

namespace oar::cpu {

/// LearningRate under the op's schedule at Step (the updates before this one), rounded once to
/// T; advances StepOut. Call it once per update, before writing ParamOut.
template <typename T> T updateRate(KernelContext &ctx) {
  T lr = ctx.input("LearningRate").data<T>()[0];
  if (!ctx.hasInput("Step"))
    return lr;
  T t = ctx.input("Step").data<T>()[0];
  if (ctx.hasOutput("StepOut"))
    ctx.output("StepOut").data<T>()[0] = t + T(1);
  return T(double(lr) * kernels::lrFactor(kernels::scheduleOf(ctx.attrs()), double(t)));
}

/// The L2 decay added to the gradient (0 for adamw) and adamw's decoupled one.
template <typename T> T coupledDecay(const KernelContext &ctx) {
  return T(kernels::weightDecayOf(ctx.op(), ctx.attrs()).coupled);
}
template <typename T> T decoupledDecay(const KernelContext &ctx) {
  return T(kernels::weightDecayOf(ctx.op(), ctx.attrs()).decoupled);
}

} // namespace oar::cpu
