// Limits of distributed tables that the table ops' checks and the pservers both apply.
#include "ops/table_limits.h"

#include "support/error.h"

namespace oar::ops {

llvm::Error checkSparseOptimizer(llvm::StringRef optimizer) {
  if (optimizer == "sgd" || optimizer == "adagrad" || optimizer == "adam")
    return llvm::Error::success();
  return makeError("optimizer {0} cannot update a distributed table (known: sgd, adagrad, adam)",
                   optimizer);
}

} // namespace oar::ops
