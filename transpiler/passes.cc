// The list of the transpiler's passes, and the slice pass.
#include "transpiler/passes.h"

namespace oar {

llvm::ArrayRef<TranspilePass> transpilePasses() {
  static const TranspilePass passes[] = {
      {"distributed-table", distributedTablePass},
      {"slice", slicePass},
      {"programs", programsPass},
  };
  return passes;
}

llvm::Error slicePass(TranspileState &state) {
  auto plan = makePlan(state.source(), state.config, std::move(state.tables));
  if (!plan)
    return plan.takeError();
  state.result.plan = std::move(*plan);
  return llvm::Error::success();
}

} // namespace oar
