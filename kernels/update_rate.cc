// Reading an optimizer op's schedule.
#include "kernels/update_rate.h"

namespace oar::kernels {

LrSchedule scheduleOf(const ops::AttrReader &attrs) {
  LrSchedule s;
  std::string type = attrs.getString("lr_schedule");
  s.type = type == "step"          ? Schedule::Step
           : type == "exponential" ? Schedule::Exponential
           : type == "cosine"      ? Schedule::Cosine
                                   : Schedule::Constant;
  s.warmupSteps = attrs.getInt("warmup_steps");
  s.decaySteps = attrs.getInt("lr_decay_steps");
  s.decayRate = attrs.getFloat("lr_decay_rate");
  return s;
}

WeightDecay weightDecayOf(const proto::Op &op, const ops::AttrReader &attrs) {
  double decay = attrs.getFloat("weight_decay");
  return op.type() == "adamw" ? WeightDecay{0, decay} : WeightDecay{decay, 0};
}

} // namespace oar::kernels
