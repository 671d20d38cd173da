// The built-in model recipes behind oar-model: linear, mlp, lenet.
#pragma once

#include "api/layers.h"

namespace oar {

struct RecipeSpec {
  std::string model = "linear"; // linear | mlp | lenet
  int64_t in = 13, out = 1;
  std::vector<int64_t> hidden;            // mlp hidden sizes
  std::string act = "relu";               // between mlp layers
  std::string loss = "square_error_cost"; // or softmax_with_cross_entropy
  std::string optimizer = "sgd";          // sgd | momentum | adam | adagrad
  float lr = 0.01f, momentum = 0.9f, beta1 = 0.9f, beta2 = 0.999f, epsilon = 1e-8f;
  int64_t batchSize = 32, epochs = 1, seed = 1;
  std::string format;                // uci_housing | mnist_idx | npy | csv (empty: no feed)
  std::vector<std::string> data;     // train files
  std::vector<std::string> testData; // test files (same format); uci_housing uses its split
  bool shuffle = false;
};

/// Builds main and startup programs for `spec`, with its data feeds, loss and metrics.
/// Errors name the bad field.
llvm::Expected<ModelBuilder> buildRecipe(const RecipeSpec &spec);

} // namespace oar
