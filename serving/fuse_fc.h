// Fusing a served model's fully connected layers: each mul of a weight, add of a bias and relu
// becomes one fc op (ops/fc.cc), so a layer writes its output once instead of three times.
#pragma once

#include "ir/program.h"

namespace oar {

/// `program` (an inference program) with each layer of block 0 that reads
///   mul(X, W) -> elementwise_add(., Bias) [-> relu(.)]
/// as one fc op writing the last of them, where W is a matrix and Bias a vector along its
/// columns that no op writes. A var between those ops that another op reads, or that the program
/// returns, keeps its layer unfused. Returns how many layers it fused.
int fuseFullyConnected(proto::Program &program);

} // namespace oar
