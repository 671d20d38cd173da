// Finite-difference gradient checks of an op through autodiff, in f64.
#pragma once

#include <string>
#include <vector>

#include "executor/tensor.h"
#include "ir/program.pb.h"
#include "ir/program.h"

/// One op with its inputs; the loss is sum_k sum(Out_k * W_k) with random fixed W_k.
struct GradCheck {
  std::string op;
  std::vector<std::pair<std::string, oar::Tensor>> inputs; // (slot, value); repeat a slot for lists
  std::vector<std::pair<std::string, int>> outputs;        // (slot, count) that enter the loss
  std::vector<std::pair<std::string, int>> extraOutputs;   // outputs made but not in the loss
  oar::AttrList attrs;
  std::vector<std::string> checkSlots; // inputs whose gradient is checked
  double eps = 1e-6, rtol = 1e-5, atol = 1e-8;
};

/// Every grad check: one or more per differentiable op (test/helpers/grad_checks.cc).
std::vector<GradCheck> allGradChecks();

/// A check's op with a loss over its outputs and the backward pass: a whole program, and the
/// scope holding its inputs.
struct GradCheckProgram {
  oar::proto::Program program;
  std::string loss;
  std::vector<std::pair<std::string, std::string>> checked; // (slot, input var)
};
/// Builds the program of `c` (running the op once, on the CPU, to learn its output types) and
/// puts the inputs into `scope`.
GradCheckProgram buildGradCheck(const GradCheck &c, oar::Scope &scope);

/// Runs the check with Catch assertions on every element of every checked input.
void runGradCheck(const GradCheck &c);
/// A f64 tensor of `dims` with values uniform in [lo, hi), from `seed`.
oar::Tensor randomTensor(std::vector<int64_t> dims, uint64_t seed, double lo = -1, double hi = 1);
