// The built-in model recipes behind oar-model: linear, mlp, lenet.
#pragma once

#include "api/optimizer.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

struct RecipeSpec {
  std::string model = "linear"; // linear | mlp | lenet | wide_deep | deepfm
  int64_t in = 13, out = 1;
  std::vector<int64_t> hidden;            // mlp hidden sizes
  std::string act = "relu";               // between mlp layers
  std::string loss = "square_error_cost"; // or softmax_with_cross_entropy
  std::string optimizer = "sgd";          // sgd | momentum | adam | adamw | adagrad
  float lr = 0.01f, momentum = 0.9f, beta1 = 0.9f, beta2 = 0.999f;
  std::optional<float> epsilon; // unset: the optimizer's own (adam 1e-8, adagrad 1e-6)
  float initialAccumulator = 0; // adagrad: where each weight's squared-gradient sum starts
  // The training toolkit (docs/training.md): after each hidden fc, a norm (none | batch |
  // layer) before its activation and dropout after it; L2 (adamw: decoupled) weight decay,
  // clipping by global norm (0: off) and the learning rate's schedule.
  std::string norm = "none";
  float dropout = 0, weightDecay = 0, clipGlobalNorm = 0;
  bool weightDecayGiven = false; // adamw decays by 0.01 unless told
  LrSchedule schedule;
  int64_t batchSize = 32, epochs = 1, seed = 1;
  std::string format; // uci_housing | mnist_idx | npy | csv | tsv | slot | libffm (empty: no feed)
  /// csv, tsv, slot, libffm: the columns by name (feed/schema.h). wide_deep and deepfm take any
  /// number of dense and sparse columns; linear and mlp take dense columns only.
  std::optional<proto::FeedSchema> schema;
  std::vector<std::string> data;     // train files
  std::vector<std::string> testData; // test files (same format); uci_housing uses its split
  bool shuffle = false;
  // wide_deep and deepfm (criteo: label, 13 dense features, 26 categorical keys; or a schema)
  int64_t embDim = 10;                    // width of each slot's embedding
  int64_t vocab = int64_t(1) << 22;       // rows of the tables: keys are folded mod vocab
  bool distributedTables = true;          // tables live on the pservers when transpiled
  int64_t admitAfter = 1, evictAfter = 0; // distributed tables: admission and eviction
  float admitProbability = 1.0f;
};

/// The settings a CTR model (wide_deep, deepfm) takes for each flag the user did not give
/// (`given` holds the names of those they did, as "lr"): what ctrDefaultsText() lists.
void applyCtrDefaults(RecipeSpec &spec, const llvm::StringSet<> &given);
/// Those defaults in words, for --help.
std::string ctrDefaultsText();

/// What a recipe reads from its training data before it is built (api/recipe_data.cc): a CTR
/// model standardizes its schema's plain dense columns (unless `given` has "raw-dense"), the
/// schema's auto statistics are computed in one pass over spec.data, and the tables get a vocab
/// sized to the keys found there (4 rows a distinct key, 1024 to 2^22) unless "vocab" was given.
/// Returns one line per thing it decided, for the tool to print.
llvm::Expected<std::vector<std::string>> fitRecipeToData(RecipeSpec &spec,
                                                         const llvm::StringSet<> &given);

/// The settings a recipe is built with, one "name value" line each (oar-model prints them).
std::string describeRecipe(const RecipeSpec &spec);

/// Builds main and startup programs for `spec`, with its data feeds, loss and metrics.
/// Errors name the bad field.
llvm::Expected<ModelBuilder> buildRecipe(const RecipeSpec &spec);

/// wide_deep or deepfm over the criteo feed (buildRecipe calls it for those models).
llvm::Expected<ModelBuilder> buildCtrRecipe(const RecipeSpec &spec);

/// A hidden layer of the mlp and CTR towers: fc, then the spec's norm, activation and dropout.
std::string hiddenLayer(ModelBuilder &m, const RecipeSpec &s, llvm::StringRef x, int64_t size);
/// Checks the toolkit's fields of `s` (norm, dropout, decay, clipping, schedule).
llvm::Error checkToolkit(const RecipeSpec &s);

/// The optimizer a recipe names; and a feed over `files` with the recipe's batching.
llvm::Expected<std::unique_ptr<Optimizer>> makeRecipeOptimizer(const RecipeSpec &s);
FeedSpec recipeFeed(const RecipeSpec &s, const std::vector<std::string> &files,
                    const std::vector<std::string> &columns, llvm::StringRef split);

} // namespace oar
