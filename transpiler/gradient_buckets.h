// Gradient buckets (PyTorch DDP's): a collective or hybrid trainer's dense gradients cut into
// buckets in the order backward finishes them, each bucket's all-reduce started as soon as
// backward is done with it, on a thread of its own, while backward goes on; the optimizer waits
// for them all.
#pragma once

#include <string>
#include <vector>

#include "ir/program.h"
#include "transpiler/config.h"
#include "llvm/Support/Error.h"

namespace oar {

/// Where the all-reduce ops go in a block: `before[k]` are the ops to insert before op k
/// (k == ops_size(): at the end).
struct GradientAllreduce {
  std::vector<std::vector<proto::Op>> before;
  int buckets = 0;
};

/// The all-reduce of `grads` (denseGradients) in `block`, whose first optimizer op is
/// `firstOptimizer`, for `config`: with bucketBytes 0, one c_allreduce_avg just before the
/// optimizer. Else buckets of at least firstBucketBytes (the first), then bucketBytes, of grads
/// in the order of their last use before the optimizer (one dtype a bucket); a
/// c_allreduce_start after each bucket's last use, and the c_allreduce_waits before the
/// optimizer. Buckets whose last use is the op just before the optimizer (nothing left to
/// overlap) are summed after the waits, by one c_allreduce_avg a dtype. Errors name a grad
/// that is not declared.
llvm::Expected<GradientAllreduce> planGradientAllreduce(const proto::Block &block,
                                                        const std::vector<std::string> &grads,
                                                        int firstOptimizer,
                                                        const DistributeConfig &config);

} // namespace oar
