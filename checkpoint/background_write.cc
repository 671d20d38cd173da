// Writing checkpoints off the training thread.
#include "checkpoint/background_write.h"

#include <cstdlib>

#include "support/env_names.h"
#include "support/error.h"

namespace oar {

BackgroundWrite::~BackgroundWrite() { join(); }

void BackgroundWrite::join() {
  if (thread_.joinable())
    thread_.join();
}

llvm::Error BackgroundWrite::wait() {
  join();
  if (failure_.empty())
    return llvm::Error::success();
  std::string why = std::move(failure_);
  failure_.clear();
  return makeError("{0}", why);
}

/// OAR_CHECKPOINT_WRITES=inline writes on the caller's thread instead: what a checkpoint costs
/// then, for bench/checkpoint_cost.sh to compare.
static bool inlineWrites() {
  static const bool inlined = [] {
    const char *v = std::getenv(env::kOarCheckpointWrites);
    return v && llvm::StringRef(v) == "inline";
  }();
  return inlined;
}

llvm::Error BackgroundWrite::start(std::function<llvm::Error()> write) {
  if (llvm::Error err = wait())
    return err;
  if (inlineWrites())
    return write();
  thread_ = std::thread([this, write = std::move(write)] {
    if (llvm::Error err = write())
      failure_ = llvm::toString(std::move(err));
  });
  return llvm::Error::success();
}

Scope copyPersistables(const proto::Program &program, const Scope &scope) {
  Scope copy;
  for (const proto::Var &v : program.blocks(0).vars())
    if (const Tensor *t = v.persistable() ? scope.find(v.name()) : nullptr; t && t->initialized())
      copy.get(v.name()) = onHost(*t).clone();
  return copy;
}

} // namespace oar
