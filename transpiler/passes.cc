// The list of the transpiler's passes, and the slice pass.
#include "transpiler/passes.h"

#include <future>

namespace oar {

llvm::ArrayRef<TranspilePass> transpilePasses() {
  static const TranspilePass passes[] = {
      {"collective", collectivePass},
      {"distributed-table", distributedTablePass},
      {"slice", slicePass},
      {"programs", programsPass},
  };
  return passes;
}

llvm::Error slicePass(TranspileState &state) {
  if (state.config.mode == Mode::Collective) // collectivePass wrote the job
    return llvm::Error::success();
  // Hashing the job serializes it (a megabyte for 1,000 params) and needs only the
  // single-machine programs, so it runs on another core while this one slices. Where no thread
  // can be started, get() hashes here instead. The programs as the user gave them, not as the
  // distributed-table pass rewrote them: its ops name the pservers' endpoints, which a relaunch
  // on other ports changes, and its checkpoints must still be this job's.
  std::future<uint64_t> hash = std::async(std::launch::async | std::launch::deferred,
                                          [&state] { return jobHash(state.main, state.startup); });
  auto plan = makePlan(state.source(), state.config, std::move(state.tables));
  state.jobHash = hash.get();
  if (!plan)
    return plan.takeError();
  state.result.plan = std::move(*plan);
  return llvm::Error::success();
}

} // namespace oar
