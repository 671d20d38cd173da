// Reading the PyTorch reference fixtures in test/fixtures/ and turning them into recipes.
#pragma once

#include <string>
#include <vector>

#include "api/recipes.h"
#include "executor/tensor.h"

/// One fixture folder: its spec as a recipe (npy feed over x.npy/y.npy), losses and params.
struct Fixture {
  std::string dir;
  oar::RecipeSpec spec;
  std::vector<std::string> params;
  std::vector<float> losses;
  int64_t steps = 0;
};

/// The folder holding every fixture: `test/fixtures` in the source tree.
std::string fixturesDir();
/// Loads `test/fixtures/<name>`; FAILs the test on any problem.
Fixture loadFixture(const std::string &name);
/// Names of all fixture folders, sorted.
std::vector<std::string> fixtureNames();
/// max |a-b| / (atol + rtol*|b|) over elements; <= 1 means within tolerance.
double toleranceRatio(const oar::Tensor &a, const oar::Tensor &b, double rtol, double atol);
/// Whether a and b have the same dtype, dims and bytes.
bool sameBits(const oar::Tensor &a, const oar::Tensor &b);
