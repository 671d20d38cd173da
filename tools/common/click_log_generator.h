// A realistic click log for CTR model quality: string user and item ids (Zipf), item categories,
// the hour, the device, a log-normal price, a multi-valued field of the user's recent categories,
// rows in time order with a drift, and a planted model whose best AUC is known. The signal sits
// where a CTR model needs crosses to find it: category by hour, category by price band, and
// "is this item's category among the user's recent ones".
#pragma once

#include <cstdint>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

struct ClickLogOptions {
  int64_t trainLines = 500000, testLines = 100000; ///< the test lines follow the train ones in time
  int64_t users = 400000, items = 250000, categories = 40;
  int64_t days = 14; ///< the log's span: hours cycle through each day
  double zipf = 1.05;
  uint64_t seed = 1;
};

struct ClickLogSummary {
  int64_t trainPositives = 0, testPositives = 0;
  double teacherAuc = 0; ///< the planted probabilities' AUC on test.csv: the best reachable
};

/// Writes dir/train.csv, dir/test.csv (header clicked,user,item,cat,hour,device,price,recent;
/// recent's categories split by '|') and dir/test.prob. Deterministic in the options.
llvm::Expected<ClickLogSummary> generateClickLog(const ClickLogOptions &opts, llvm::StringRef dir);

} // namespace oar
