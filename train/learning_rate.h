// --lr: the base learning rate of a trained program, set at run time instead of rebuilding it.
#pragma once

#include "executor/tensor.h"
#include "ir/program.h"

namespace oar {

/// The vars the program's ops read as their LearningRate (the optimizers' learning_rate_i, a
/// pserver's tables' rate), each once, in order of first use.
std::vector<std::string> learningRateVars(const proto::Program &program);

/// Sets every learning-rate var of `program` in `scope` to `rate` (the schedules start from it).
/// Called after the state is loaded, so it wins over a checkpoint's rate. An error when the rate
/// is not positive and finite; a program without one (a PS trainer's) is left as it is.
llvm::Error setLearningRate(const proto::Program &program, Scope &scope, float rate);

} // namespace oar
