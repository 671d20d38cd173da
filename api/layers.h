// The C++ model API: layers in the spirit of Paddle's fluid.layers, building a main program and a
// startup program that initialises its parameters.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace oar {

/// How a new parameter is initialised in the startup program.
struct Initializer {
  enum Kind { XavierUniform, Constant, Uniform, Normal } kind = XavierUniform;
  float a = 0, b = 0; // Constant: value a; Uniform: [a, b); Normal: mean a, std b
  static Initializer constant(float v) { return {Constant, v, 0}; }
  static Initializer uniform(float lo, float hi) { return {Uniform, lo, hi}; }
  static Initializer normal(float mean, float stddev) { return {Normal, mean, stddev}; }
};

/// Where a feed's rows come from (DataFeed in ir/program.proto), for ModelBuilder::setTrainFeed
/// and setTestFeed. Aggregate, so C++20 designated initializers read well:
/// `m.setTrainFeed({.format = "csv", .files = {"rows.csv"}, .columns = {x, y}, .batchSize = 20})`.
struct FeedSpec {
  std::string format;               ///< uci_housing | mnist_idx | npy | csv | criteo (streamed)
  std::vector<std::string> files;   ///< read in order; relative paths from the working directory
  std::vector<std::string> columns; ///< the var each column feeds, in the format's column order
  int64_t batchSize = 32;
  int64_t epochs = 1;   ///< passes over the rows (a test feed is always read once)
  bool shuffle = false; ///< reshuffle the rows every epoch, seeded by `seed`
  int64_t seed = 1;
  std::string split;         ///< uci_housing: train | test | all (Paddle's 80/20 split)
  bool skipHeader = false;   ///< csv: the first line is a header
  int64_t limit = 0;         ///< use only the first `limit` rows (0: all)
  int64_t shuffleBuffer = 0; ///< streamed formats: rows held to shuffle (0: 65536)
  /// csv, tsv, slot, libffm: which column is the label, which are dense and sparse (feed/schema.h).
  /// The feed's columns are then its label, dense (when it has dense columns) and sparse vars.
  std::optional<proto::FeedSchema> schema;
};

/// Builds a model. Names follow Paddle: the i-th fc layer owns `fc_i.w_0` and `fc_i.b_0` and
/// writes `fc_i.tmp_k`. Every method returns the name of the var it produced.
///
/// Misuse (an undeclared input, an unknown activation or option, a name declared twice) never
/// crashes or exits: like TensorFlow's `Scope::status()`, the builder records the first error,
/// every later call builds nothing and returns "", and `status()`, `save()` and
/// `Optimizer::minimize()` return that error naming the layer and the var.
class ModelBuilder {
public:
  /// `seed` makes every random initializer's seed, so the same model gets the same numbers.
  explicit ModelBuilder(int64_t seed = 1);

  proto::Program &main() { return main_; }
  proto::Program &startup() { return startup_; }

  /// An input var of dims [-1, dims...]; gradients stop here.
  std::string data(llvm::StringRef name, llvm::ArrayRef<int64_t> dims, DType dtype = proto::F32);
  /// out = act(x * W + b), x flattened to [batch, rest]. act: "", relu, sigmoid, tanh, softmax.
  /// Without `bias`, no b (a batch_norm after it shifts instead, as Paddle's bias_attr=False).
  std::string fc(llvm::StringRef x, int64_t size, llvm::StringRef act = "",
                 Initializer weightInit = {}, bool bias = true);
  /// act(batch_norm(x)) per channel (dim 1): `batch_norm_i.w_0` scale, `.b_0` shift, `.w_1`
  /// running mean and `.w_2` running variance (not trained). `momentum` weighs the running
  /// statistics (Paddle's convention: PyTorch's 0.1 is 0.9 here).
  std::string batchNorm(llvm::StringRef x, llvm::StringRef act = "", float momentum = 0.9f,
                        float epsilon = 1e-5f);
  /// act(layer_norm(x)) over the last dim: `layer_norm_i.w_0` scale, `.b_0` shift.
  std::string layerNorm(llvm::StringRef x, llvm::StringRef act = "", float epsilon = 1e-5f);
  /// Inverted dropout with probability `dropProb` in training, the identity in evaluation and
  /// inference; its masks repeat with the model's seed.
  std::string dropout(llvm::StringRef x, float dropProb);
  /// Rows of a [vocab, width] table picked by i64 ids.
  std::string embedding(llvm::StringRef ids, int64_t vocab, int64_t width, bool isSparse = false,
                        bool isDistributed = false, Initializer init = {});
  /// ids mod buckets: keys (hashes) folded into a table of `buckets` rows.
  std::string idMod(llvm::StringRef ids, int64_t buckets);
  /// Sum over `dims` (negative counts from the end).
  std::string reduceSum(llvm::StringRef x, std::vector<int64_t> dims, bool keepDim = false);
  /// elementwise_add | elementwise_sub | elementwise_mul of x and y (y broadcast from `axis`).
  std::string elementwise(llvm::StringRef type, llvm::StringRef x, llvm::StringRef y,
                          int64_t axis = -1);
  std::string scale(llvm::StringRef x, float factor);
  /// The streaming ROC AUC of `probs` ([N, 1] positive-class probabilities) against `label`, over
  /// every row since the start (evaluation counts the test rows alone). Add it with addMetric.
  std::string auc(llvm::StringRef probs, llvm::StringRef label, int64_t numThresholds = 4095);
  /// act(conv(input, W) + b) with square kernels, NCHW.
  std::string conv2d(llvm::StringRef input, int64_t numFilters, int64_t filterSize,
                     int64_t stride = 1, int64_t padding = 0, llvm::StringRef act = "");
  std::string pool2d(llvm::StringRef input, int64_t size, llvm::StringRef type = "max",
                     int64_t stride = 2);
  std::string concat(const std::vector<std::string> &inputs, int64_t axis = 1);
  std::string reshape(llvm::StringRef x, std::vector<int64_t> shape);
  /// Pieces of x along `axis`, of the given sizes (Paddle's split).
  std::vector<std::string> split(llvm::StringRef x, std::vector<int64_t> sections,
                                 int64_t axis = 1);
  std::string activation(llvm::StringRef x, llvm::StringRef act);
  std::string squareErrorCost(llvm::StringRef input, llvm::StringRef label);
  std::string softmaxWithCrossEntropy(llvm::StringRef logits, llvm::StringRef label);
  std::string crossEntropy(llvm::StringRef probs, llvm::StringRef label);
  std::string sigmoidCrossEntropyWithLogits(llvm::StringRef x, llvm::StringRef label);
  std::string mean(llvm::StringRef x);
  std::string accuracy(llvm::StringRef scores, llvm::StringRef label);

  /// Appends any op to the main program; outputs are declared as `<prefix>.tmp_k` with types from
  /// shape inference. Returns the output names, in `outputSlots` order.
  /// `inPlace` names outputs that write existing vars (a running mean updated in place).
  llvm::Expected<std::vector<std::string>>
  appendOp(llvm::StringRef type, const SlotMap &inputs, const std::vector<std::string> &outputSlots,
           const AttrList &attrs = {}, llvm::StringRef prefix = "", const SlotMap &inPlace = {});
  /// A parameter in main and its initialiser in startup.
  std::string createParameter(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                              const Initializer &init, int64_t fanIn = 0, int64_t fanOut = 0);
  /// A persistable var (optimizer state, learning rate) in main, filled with `value` by startup.
  std::string createPersistable(llvm::StringRef name, llvm::ArrayRef<int64_t> dims, float value,
                                DType dtype = proto::F32);

  /// The loss the trainer reports and metrics it evaluates on the test set.
  void setLoss(llvm::StringRef loss);
  void addMetric(llvm::StringRef metric);
  /// A var a served model returns (a click probability, class probabilities): oar-export keeps
  /// the ops that compute it from the fed vars, and oar-predict writes it per row.
  void addPrediction(llvm::StringRef var);

  /// The rows training reads, and the rows the trained model is scored on. The format, the
  /// files, and that every column names a declared var are checked here.
  void setTrainFeed(const FeedSpec &feed);
  void setTestFeed(const FeedSpec &feed);

  /// Success, or the first misuse of this builder (see the class comment).
  llvm::Error status() const;
  /// Records `err` as this builder's failure unless one is recorded already. For helpers that
  /// build layers of their own on top of appendOp().
  void fail(llvm::Error err);
  bool failed() const { return !firstError_.empty(); }

  /// Verifies both programs and writes `dir/main.pb` and `dir/startup.pb` (with `alsoText`, the
  /// `.pbtxt` forms too), creating `dir`. Returns status() first if the builder failed.
  llvm::Error save(llvm::StringRef dir, llvm::StringRef origin = "written by oar::ModelBuilder",
                   bool alsoText = false) const;

  /// A fresh `<layer>_<i>` prefix (fc_0, fc_1, ...).
  std::string uniqueLayerName(llvm::StringRef layer);

private:
  /// The var `name` of block 0, or a recorded error naming `layer` and nullptr.
  const proto::Var *inputVar(llvm::StringRef layer, llvm::StringRef name);
  /// Records an error unless no var `name` exists yet.
  bool checkNewName(llvm::StringRef layer, llvm::StringRef name);
  /// Checks `feed` and stores it in `dst`.
  void setFeed(const char *which, const FeedSpec &feed, proto::DataFeed &dst);
  /// Like appendOp, for the layers: a bug in a layer, not user input, makes it fail.
  std::string appendLayerOp(llvm::StringRef type, const SlotMap &inputs, llvm::StringRef outputSlot,
                            const AttrList &attrs, llvm::StringRef prefix);
  proto::Program main_, startup_;
  int64_t seed_;
  int64_t nextSeed_ = 0;
  std::map<std::string, int> layerCounts_, tmpCounts_;
  std::string firstError_;
};

} // namespace oar
