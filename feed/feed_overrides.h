// Run-time changes to a program's data feeds, so one model file trains on any data of its shape.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace oar {

/// What `--data`, `--test-data`, `--epochs` and `--batch-size` ask for; unset fields keep the
/// program's values.
struct FeedOverrides {
  std::vector<std::string> data, testData; ///< files, in the feed format's order
  std::optional<int64_t> epochs, batchSize;
  bool empty() const { return data.empty() && testData.empty() && !epochs && !batchSize; }
};

/// "a.csv,b.csv" -> {"a.csv", "b.csv"}; empty entries are dropped.
std::vector<std::string> splitFileList(llvm::StringRef list);

/// Applies `o` to `main`'s train and test feeds:
/// - `data` replaces the train feed's files. uci_housing draws its test rows from the same file,
///   so a test feed that read the old train files follows unless `testData` is given.
/// - `testData` replaces the test feed's files; a program without a test feed gets one like its
///   train feed (read once, in order).
/// - `batchSize` sets both feeds' batch size; `epochs` the train feed's.
/// `source` names the program in errors ("main.pb has no train feed to give --data to").
llvm::Error applyFeedOverrides(proto::Program &main, const FeedOverrides &o,
                               llvm::StringRef source);

} // namespace oar
