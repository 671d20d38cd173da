// Scores for every row of a data feed: rows read in order, batches predicted on several threads,
// one line per row written in input order.
#pragma once

#include "serving/predictor.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

/// The values of one row of `outputs` (row `row` of each), tab-separated, as oar-predict writes
/// them: each float with 9 significant digits, which read back to the same float.
void writeScoreRow(llvm::raw_ostream &os, const std::vector<Tensor> &outputs, int64_t row);

/// Predicts every row `feed` reads (its format, files and columns; read once, in order) with
/// `predictor` on `threads` threads, and writes a line per row to `out` in input order. Returns
/// the rows written. Errors name the file and line of bad input.
llvm::Expected<int64_t> predictFeed(const Predictor &predictor, const proto::DataFeed &feed,
                                    llvm::raw_ostream &out, int threads);

} // namespace oar
