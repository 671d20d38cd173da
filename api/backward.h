// Autodiff: append the gradient ops of a scalar loss to a program.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"

namespace oar {

/// A trainable parameter and the var holding its gradient.
struct ParamGrad {
  std::string param, grad;
};

/// Appends to block 0 the ops computing `<var>@GRAD` of `loss` for every var on a path from a
/// trainable parameter to the loss. A var read by several ops gets the sum of their gradients.
/// Names `loss` as the program's loss when it names none yet.
/// Vars marked stop_gradient, or in `noGradSet`, get none and stop propagation.
/// Returns the (param, grad) pairs, sorted by param name.
llvm::Expected<std::vector<ParamGrad>> appendBackward(proto::Program &prog, llvm::StringRef loss,
                                                      const std::set<std::string> &noGradSet = {});

} // namespace oar
