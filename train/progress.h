// Progress display for training: a bar on a terminal, plain lines otherwise.
#pragma once

#include "train/training_loop.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

/// Prints step, loss and samples/s. `prefix` starts every line (e.g. "trainer 1: ").
class ProgressPrinter {
public:
  ProgressPrinter(llvm::raw_ostream &os, std::string prefix, int64_t logEvery = 0);
  void update(const StepReport &r);
  /// Ends the bar's line.
  void finish();

private:
  llvm::raw_ostream &os_;
  std::string prefix_;
  int64_t logEvery_;
  bool terminal_;
  double samples_ = 0, seconds_ = 0;
};

} // namespace oar
