// The learning-rate schedule the optimizer kernels apply (ops/optimizers.cc declares its attrs):
// the same arithmetic on the CPU and the GPU, so a pserver's update equals one machine's.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/host_device.h"

namespace oar::kernels {

enum class Schedule : int { Constant, Step, Exponential, Cosine };

struct LrSchedule {
  Schedule type = Schedule::Constant;
  int64_t warmupSteps = 0, decaySteps = 1;
  double decayRate = 1;
};

/// The factor of the base rate for the update after `t` updates: (t + 1) / W during warm-up,
/// then the schedule over u = t - W. Computed in double, then rounded once, whatever T is.
OAR_HOST_DEVICE double lrFactor(const LrSchedule &s, double t) {
  if (t < double(s.warmupSteps))
    return (t + 1) / double(s.warmupSteps);
  double u = t - double(s.warmupSteps), n = double(s.decaySteps);
  switch (s.type) {
  case Schedule::Step:
    return pow(s.decayRate, floor(u / n));
  case Schedule::Exponential:
    return pow(s.decayRate, u / n);
  case Schedule::Cosine:
    return 0.5 * (1 + cos(3.14159265358979323846 * (u < n ? u : n) / n));
  case Schedule::Constant:
    break;
  }
  return 1;
}

} // namespace oar::kernels
