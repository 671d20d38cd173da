// Batch sources: the in-memory one over loadDataset, and the choice of source per format.
#include "feed/batch_source.h"

#include <optional>

#include "feed/criteo_feed.h"
#include "feed/schema_source.h"

namespace oar {

BatchSource::~BatchSource() = default;

namespace {

/// Every row loaded once, dealt by a BatchReader.
class InMemorySource : public BatchSource {
public:
  InMemorySource(Dataset data, const proto::DataFeed &feed, int64_t trainerId, int64_t trainers)
      : data_(std::move(data)), feed_(feed), trainerId_(trainerId), trainers_(trainers) {
    columns_ = data_.columns;
    reader_.emplace(data_, feed_, trainerId_, trainers_);
  }
  llvm::Expected<bool> next(std::vector<Tensor> &batch, int64_t &epoch) override {
    return reader_->next(batch, epoch);
  }
  bool atEpochEnd() const override { return reader_->atEpochEnd(); }
  int64_t batchesPerEpoch() const override { return reader_->batchesPerEpoch(); }
  llvm::Error rewind() override {
    reader_.emplace(data_, feed_, trainerId_, trainers_);
    return llvm::Error::success();
  }

private:
  Dataset data_;
  proto::DataFeed feed_;
  int64_t trainerId_, trainers_;
  std::optional<BatchReader> reader_; // reads data_, so declared after it
};

} // namespace

bool isStreamingFeed(const proto::DataFeed &feed) {
  return feed.format() == "criteo" || isSchemaFeed(feed);
}

llvm::Expected<std::unique_ptr<BatchSource>> openBatchSource(const proto::DataFeed &feed,
                                                             const proto::Block &block,
                                                             int64_t trainerId, int64_t trainers) {
  if (feed.format() == "criteo")
    return openCriteoSource(feed, block, trainerId, trainers);
  if (isSchemaFeed(feed))
    return openSchemaSource(feed, block, trainerId, trainers);
  auto data = loadDataset(feed, block);
  if (!data)
    return data.takeError();
  return std::make_unique<InMemorySource>(std::move(*data), feed, trainerId, trainers);
}

} // namespace oar
