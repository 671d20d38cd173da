// oar::Predictor: an exported model loaded once and run on batches of rows, from any number of
// threads at once. The C++ face of oar-predict.
//
//   auto predictor = oar::Predictor::load("export_dir");        // llvm::Expected
//   // one tensor per input, rows along dim 0, in predictor->inputs() order
//   auto scores = (*predictor)->predict({dense, sparse});        // one tensor per output
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/tensor.h"
#include "llvm/ADT/ArrayRef.h"

namespace oar {

struct ExportedModel;

struct PredictorOptions {
  /// Compute threads of one predict() call (OpenMP, for its GEMMs). Callers that run several
  /// predict() at once (a server's request threads) keep 1; one caller with large batches may
  /// give it more.
  int threadsPerCall = 1;
  /// Runs each fully connected layer (mul, bias, relu) as one op (serving/fuse_fc.h). The scores
  /// are the same to the last bit; off only to compare.
  bool fuseLayers = true;
  /// Runs the fused layers' matrix products in bfloat16 (serving/bf16_layer.h): several times
  /// the f32 speed on CPUs with AMX, scores off by about 1e-3. load() fails where the CPU has no
  /// bf16 product (no AVX-512).
  bool bf16Layers = false;
  /// Runs each fused f32 layer fed by a relu by summing only its input's nonzeros, on batches
  /// where at most 40% are nonzero (serving/sparse_input_layer.h): a trained MLP's hidden
  /// outputs are mostly zeros, and this does a fraction of the GEMM's work. The scores agree
  /// with the GEMM's to f32 rounding (about 1e-7; the tests allow 1e-6), not to the bit. Only
  /// on CPUs with AVX-512.
  bool sparseInputs = true;
};

class Predictor {
public:
  /// Loads the export written by oar-export into `dir`. Errors name the file.
  static llvm::Expected<std::unique_ptr<Predictor>> load(llvm::StringRef dir,
                                                         PredictorOptions options = {});
  /// The same from an export in memory (oar-executor --predict makes one from a checkpoint).
  static llvm::Expected<std::unique_ptr<Predictor>> fromExport(ExportedModel model,
                                                               PredictorOptions options = {});
  ~Predictor();

  /// The vars a batch feeds, in the order predict() takes them, and their declared types.
  const std::vector<std::string> &inputs() const;
  /// The vars predict() returns, in order.
  const std::vector<std::string> &outputs() const;
  /// The input `i`'s dtype and dims (-1 for the rows).
  DType inputType(size_t i) const;
  std::vector<int64_t> inputDims(size_t i) const;
  /// The inference program (its feed says how rows come from files).
  const proto::Program &program() const;

  /// Runs the model on one batch: `batch[i]` feeds inputs()[i], each with the same number of
  /// rows along dim 0. Returns one tensor per output with a row per input row. Safe to call from
  /// many threads at once: each call has its own vars, and the model's are read only. Errors name
  /// the input or the op. A call's intermediate tensors are kept for the next call (as many sets
  /// as calls have run at once), so a steady load allocates nothing after its first batches.
  llvm::Expected<std::vector<Tensor>> predict(const std::vector<Tensor> &batch) const;

  /// Runs the model on raw rows, as a csv file holds them: `rows[r][c]` is row r's cell of the
  /// column `columns[c]` (a multi-valued column's values joined by its separator, `|` unless the
  /// schema says). The model's schema turns them into its inputs as its data feed would: the
  /// dense transforms with the statistics computed at training, buckets, hashed ids and crosses.
  /// A column not named reads as an empty cell (missing), the label is not needed, and a column
  /// the model has no use for is an error naming it. Only for models whose feed has a schema
  /// (csv, tsv, slot, libffm). Thread-safe as predict() is.
  llvm::Expected<std::vector<Tensor>>
  predictRows(llvm::ArrayRef<std::string> columns,
              llvm::ArrayRef<std::vector<std::string>> rows) const;

private:
  struct Impl;
  explicit Predictor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace oar
