// What every optimizer kernel reads besides its state: the schedule of its learning rate
// (kernels/lr_schedule.h) from the op's attrs.
#pragma once

#include "kernels/lr_schedule.h"
#include "ops/op_registry.h"

namespace oar::kernels {

/// The op's lr_schedule, warmup_steps, lr_decay_steps and lr_decay_rate (checked by shape
/// inference).
LrSchedule scheduleOf(const ops::AttrReader &attrs);

/// An update op's weight decay: L2 added to the gradient (`coupled`), or, for adamw, Param
/// shrunk by lr * decay before the step (`decoupled`). At most one is not 0.
struct WeightDecay {
  double coupled = 0, decoupled = 0;
};
WeightDecay weightDecayOf(const proto::Op &op, const ops::AttrReader &attrs);

} // namespace oar::kernels
