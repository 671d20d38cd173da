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
/// Limits oneDNN's GEMMs to its AVX kernels (no FMA) for the rest of the process, before the
/// first GEMM: they give the same bits on every x86-64 machine. The FMA kernels (AVX2, AVX-512)
/// round a GEMM's sums differently on each ISA, and Adam, which divides each gradient by its
/// running RMS, turns those last bits into whole steps of lr for weights whose gradient sums
/// nearly cancel: on an AMD EPYC (AVX2) the MNIST MLP's Adam trajectory leaves PyTorch's by 1e-4
/// after 10 steps and 1e-2 after 30, while the same code on the AVX kernels stays within 1e-4.
/// False (and a warning) when a GEMM ran before the call.
bool useReproducibleGemm();
