// Statistics of a schema's columns from the training data, in one streaming pass: the mean and
// std a `standardize` column left for oar to compute, the quantile boundaries of `bucketize auto
// N`, and an estimate of how many distinct keys the sparse columns hold (to size a model's
// tables). The numbers go into the schema, and so into the program: training and serving read
// the column the same way.
#pragma once

#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

/// What one pass over the data found.
struct DataStatistics {
  int64_t rows = 0;
  int64_t distinctKeys = 0; ///< estimated (linear counting), over every key of every row
};

/// The values a quantile sample keeps per column; past it, a seeded reservoir sample.
inline constexpr int64_t kQuantileSample = int64_t(1) << 20;

/// Reads every line of `files` (as `format` with `schema`'s columns) and fills in the schema's
/// auto statistics: standardize gets the mean and the population std (NumPy's np.std), bucketize
/// auto N the quantiles at 1/N .. (N-1)/N (np.quantile's linear rule, rounded to f32, repeats
/// dropped); missing cells are left out. Errors name the file and line, or the column (all
/// missing; one value for standardize).
llvm::Expected<DataStatistics> computeSchemaStatistics(proto::FeedSchema &schema,
                                                       llvm::StringRef format,
                                                       llvm::ArrayRef<std::string> files);

/// The quantile of sorted `values` at q in [0, 1], as np.quantile computes it (linear).
double quantileOf(llvm::ArrayRef<double> sorted, double q);

} // namespace oar
