// Synthetic click logs in Criteo's text format from a planted model with a known best AUC.
#pragma once

#include <cstdint>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

/// What oar-gen-ctr writes. Every line is Criteo's: `label \t I1..I13 \t C1..C26`, empty fields
/// missing, categorical values as 8 hex digits. Categorical slots past `slots` are left empty.
struct CtrGenOptions {
  int64_t trainLines = 1000000, testLines = 100000;
  int64_t slots = 26; ///< categorical slots that carry values, 1..26
  uint64_t seed = 1;  ///< the teacher and both files follow from it alone
  double zipf = 1.1;  ///< exponent of each slot's Zipf distribution over its values (> 0)
};

/// What a generation wrote.
struct CtrGenSummary {
  int64_t trainPositives = 0, testPositives = 0;
  /// The teacher's AUC on the test file: its true click probabilities scored against the labels
  /// drawn from them, the best any model can reach on that file.
  double teacherAuc = 0;
};

/// Writes `dir/train.txt`, `dir/test.txt` and `dir/test.prob` (each test line's true click
/// probability, one per line), creating `dir`. The teacher: a logistic link over a bias set
/// for about 25% clicks, a weight per categorical value (frequent values weigh more), a weight
/// per integer feature's log(1+x), and a factorisation-machine interaction between the values
/// of the first slots. Train and test lines come from separate streams, so the test file does
/// not depend on --train-lines. Deterministic: the same options give the same bytes.
llvm::Expected<CtrGenSummary> generateCtr(const CtrGenOptions &opts, llvm::StringRef dir);

/// The area under the ROC curve of `scores` against `labels` (nonzero = positive), by sorting;
/// tied scores count half. 0 when either class is absent.
double sortedScoreAuc(llvm::ArrayRef<double> scores, llvm::ArrayRef<uint8_t> labels);

} // namespace oar
