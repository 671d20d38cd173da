// What every CUDA optimizer kernel reads besides its state, as kernels/cpu/update_rate.h does on
// the CPU: the scheduled rate (read on the device, where LearningRate and Step live), the weight
// decay, and the update counter's advance.
#pragma once

#include "kernels/cuda/cuda_util.h"
#include "kernels/update_rate.h"

namespace oar::cuda {

/// LearningRate under the op's schedule at Step, rounded once to T as the CPU's updateRate()
/// (kernels/cpu/update_rate.h) does; read on the device, where both live.
template <typename T> struct UpdateRate {
  const T *lr;
  const T *step; // nullptr without the Step input: the rate is LearningRate
  kernels::LrSchedule schedule;
  __device__ T operator()() const {
    if (!step)
      return lr[0];
    return T(double(lr[0]) * kernels::lrFactor(schedule, double(step[0])));
  }
};

template <typename T> UpdateRate<T> updateRate(const KernelContext &ctx) {
  return {ctx.input("LearningRate").data<T>(),
          ctx.hasInput("Step") ? ctx.input("Step").data<T>() : nullptr,
          kernels::scheduleOf(ctx.attrs())};
}

/// The L2 decay added to the gradient (0 for adamw) and adamw's decoupled one.
template <typename T> T coupledDecay(const KernelContext &ctx) {
  return T(kernels::weightDecayOf(ctx.op(), ctx.attrs()).coupled);
}
template <typename T> T decoupledDecay(const KernelContext &ctx) {
  return T(kernels::weightDecayOf(ctx.op(), ctx.attrs()).decoupled);
}

// Runs after the update's kernels on the same stream (they read Step): StepOut may be Step.
template <typename T> __global__ void stepKernel(const T *step, T *stepOut) {
  stepOut[0] = step[0] + T(1);
}

/// StepOut = Step + 1, when the op counts its updates (as on the CPU, also when no row is
/// touched); call it after the update's launches.
template <typename T> void advanceStep(KernelContext &ctx) {
  if (ctx.hasInput("Step") && ctx.hasOutput("StepOut"))
    stepKernel<T>
        <<<1, 1, 0, stream()>>>(ctx.input("Step").data<T>(), ctx.output("StepOut").data<T>());
}

} // namespace oar::cuda
