// The data feed described inside a program: load the rows of a dataset, then deal batches.
#pragma once

#include <random>

#include "executor/tensor.h"

namespace oar {

/// Every row of a feed: one tensor per column, rows along dim 0, typed like its var.
struct Dataset {
  std::vector<std::string> columns; // var names
  std::vector<Tensor> data;
  int64_t rows = 0;
};

/// The formats a feed may name. criteo, and csv, tsv, slot and libffm with a schema, are
/// streamed (see batch_source.h); the others are loaded whole.
inline constexpr const char *kFeedFormats[] = {"uci_housing", "mnist_idx", "npy",    "csv",   "criteo",
                                               "tsv",         "slot",      "libffm", "libsvm"};
inline constexpr const char *kFeedFormatList =
    "use uci_housing, mnist_idx, npy, csv, tsv, slot, libffm, libsvm or criteo";

/// Checks what can be checked without reading the files: a known format, at least one file,
/// columns naming declared vars of `block`, a positive batch size and epoch count.
llvm::Error checkFeed(const proto::DataFeed &feed, const proto::Block &block);

/// Reads the feed's files in its format (uci_housing, mnist_idx, npy, csv) and shapes each
/// column for its var in `block`. Errors name the file (and line, for text formats) and var.
llvm::Expected<Dataset> loadDataset(const proto::DataFeed &feed, const proto::Block &block);

/// Deals batches of a dataset to one trainer: row i (in the epoch's order) goes to trainer
/// i mod trainers, so N trainers with batch B together see the rows of one batch of N*B.
/// The last batch of an epoch may be smaller.
class BatchReader {
public:
  BatchReader(const Dataset &data, const proto::DataFeed &feed, int64_t trainerId = 0,
              int64_t trainers = 1);
  /// Fills `batch` (one tensor per column) and its epoch; false after the last epoch.
  bool next(std::vector<Tensor> &batch, int64_t &epoch);
  /// Batches per epoch for this trainer.
  int64_t batchesPerEpoch() const;
  /// Whether the batch next() gave last was the last of its epoch.
  bool atEpochEnd() const { return epoch_ >= 0 && pos_ >= mine_.size(); }

private:
  void startEpoch();
  const Dataset &data_;
  int64_t batchSize_, epochs_, epoch_ = -1;
  bool shuffle_;
  std::mt19937_64 rng_;
  int64_t trainerId_, trainers_;
  std::vector<int64_t> mine_; // this trainer's rows in this epoch's order
  size_t pos_ = 0;
};

} // namespace oar
