// Run-time overrides of a program's data feeds.
#include "feed/feed_overrides.h"

#include "feed/data_feed.h"
#include "support/error.h"

namespace oar {

std::vector<std::string> splitFileList(llvm::StringRef list) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  list.split(parts, ',', -1, /*KeepEmpty=*/false);
  return {parts.begin(), parts.end()};
}

static void setFiles(proto::DataFeed &feed, const std::vector<std::string> &files) {
  feed.clear_files();
  for (const std::string &f : files)
    feed.add_files(f);
}

static bool sameFiles(const proto::DataFeed &a, const proto::DataFeed &b) {
  return std::equal(a.files().begin(), a.files().end(), b.files().begin(), b.files().end());
}

llvm::Error applyFeedOverrides(proto::Program &main, const FeedOverrides &o,
                               llvm::StringRef source) {
  if (o.empty())
    return llvm::Error::success();
  proto::DataFeed &train = *main.mutable_train_feed();
  if (train.columns_size() == 0)
    return makeError("{0} has no train feed to give --data, --test-data, --epochs or --batch-size "
                     "to; describe one with ModelBuilder::setTrainFeed or oar-model --format",
                     source);
  if (o.epochs && *o.epochs <= 0)
    return makeError("--epochs {0} must be positive", *o.epochs);
  if (o.batchSize && *o.batchSize <= 0)
    return makeError("--batch-size {0} must be positive", *o.batchSize);
  bool hadTest = main.has_test_feed() && main.test_feed().columns_size() > 0;
  proto::DataFeed &test = *main.mutable_test_feed();
  if (!o.data.empty()) {
    if (hadTest && o.testData.empty() && sameFiles(test, train))
      setFiles(test, o.data);
    setFiles(train, o.data);
  }
  if (!o.testData.empty()) {
    if (!hadTest) {
      test = train;
      test.set_epochs(1);
      test.set_shuffle(false);
      test.set_limit(0);
      test.set_split(train.format() == "uci_housing" ? "test" : "");
    }
    setFiles(test, o.testData);
  }
  if (o.epochs)
    train.set_epochs(*o.epochs);
  if (o.batchSize) {
    train.set_batch_size(*o.batchSize);
    if (test.columns_size() > 0)
      test.set_batch_size(*o.batchSize);
  }
  if (llvm::Error err = checkFeed(train, main.blocks(0)))
    return addContext(std::move(err), source + ": train feed");
  if (test.columns_size() > 0)
    if (llvm::Error err = checkFeed(test, main.blocks(0)))
      return addContext(std::move(err), source + ": test feed");
  if (!hadTest && test.columns_size() == 0)
    main.clear_test_feed();
  return llvm::Error::success();
}

} // namespace oar
