// The gradient bucket flags of the tools that plan collective jobs (oar-executor, oar-transpile),
// declared once: each tool makes one BucketFlags in its own option category.
#pragma once

#include "transpiler/config.h"

#include "llvm/Support/CommandLine.h"

namespace oar {

struct BucketFlags {
  llvm::cl::opt<double> firstBucketMb, bucketMb;

  explicit BucketFlags(llvm::cl::OptionCategory &category);
  /// Sets `config`'s bucket sizes from the flags; an error names them when out of range.
  llvm::Error apply(DistributeConfig &config) const;
};

} // namespace oar
