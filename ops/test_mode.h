// Evaluation and inference programs: ops that train differently (batch_norm, dropout) switched
// to their evaluation behaviour through their is_test attr, as Paddle's clone(for_test=True).
#pragma once

#include "ir/program.h"

namespace oar::ops {

/// Whether an op of `program` has an is_test attr that is not set (it trains differently).
bool hasTrainingBehaviour(const proto::Program &program);
/// Sets is_test on every op of `program` whose schema declares it.
void setTestMode(proto::Program &program);

} // namespace oar::ops
