// Where a trainer's batches come from: rows loaded into memory once, or a stream of its files.
#pragma once

#include <memory>

#include "feed/data_feed.h"

namespace oar {

/// Deals one trainer's batches of a data feed, epoch after epoch. Not thread safe.
class BatchSource {
public:
  virtual ~BatchSource();
  /// The vars the tensors of a batch feed, in order.
  const std::vector<std::string> &columns() const { return columns_; }
  /// Fills `batch` (one tensor per column, rows along dim 0) and `epoch`; false after the last
  /// epoch. The last batch of an epoch may be smaller. Bad data is an error naming file and line.
  virtual llvm::Expected<bool> next(std::vector<Tensor> &batch, int64_t &epoch) = 0;
  /// Whether the batch next() gave last was the last of its epoch.
  virtual bool atEpochEnd() const = 0;
  /// Batches per epoch for this trainer, or 0 when unknown before reading (streams).
  virtual int64_t batchesPerEpoch() const = 0;
  /// Starts again at the first batch of the first epoch (the test feed, evaluated repeatedly).
  virtual llvm::Error rewind() = 0;

protected:
  std::vector<std::string> columns_;
};

/// Whether `feed` is read as a stream (no process holds the data set) rather than loaded: criteo,
/// and the formats read through a schema (feed/schema_source.h).
bool isStreamingFeed(const proto::DataFeed &feed);

/// Opens `feed` for trainer `trainerId` of `trainers`. Streamed feeds read their files
/// as batches are asked for; the others load every row once (loadDataset) and deal them as
/// BatchReader does.
llvm::Expected<std::unique_ptr<BatchSource>> openBatchSource(const proto::DataFeed &feed,
                                                             const proto::Block &block,
                                                             int64_t trainerId = 0,
                                                             int64_t trainers = 1);

} // namespace oar
