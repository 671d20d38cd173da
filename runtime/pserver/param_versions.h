// Async and GEO pservers: a version of a param a trainer was given is never written again.
#pragma once

#include <atomic>
#include <set>
#include <string>
#include <vector>

#include "executor/executor.h"
#include "ir/program.pb.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// An async (or GEO) pserver updates a param while trainers may still read versions they
/// fetched: a reply being sent, or a buffer a trainer of this host reads through peer memory.
/// So a fetch shares the param's buffer instead of copying it, and an update that finds the
/// buffer shared writes the next version into a fresh one: the block reads the current version
/// under another name (previousVersionName) and writes the param's name, which costs the
/// update no more than writing in place. A block whose kernels may write only part of a param
/// (selected-rows gradients, ops not known to write every element) copies the version first.
/// An update whose param no one else holds runs in place, as the block is written.
class ParamVersions {
public:
  /// Finds the served `params` each optimize block of `program` writes and makes the blocks'
  /// out-of-place form where the ops allow it. Creates the vars that needs in `scope` now: the
  /// service threads only look vars up.
  void init(const proto::Program &program, const std::set<std::string> &params, Scope &scope);
  /// Runs optimize block `block` of `program` (the copy init saw) on its service thread.
  llvm::Error apply(Executor &exec, const proto::Program &program, int block, Scope &scope);
  /// Updates that wrote a new version beside one being read, and that copied one first.
  uint64_t freshVersions() const { return fresh_; }
  uint64_t copiedVersions() const { return copied_; }

private:
  struct BlockPlan {
    std::vector<std::string> params; ///< served params the block writes
    bool outOfPlace = false;         ///< outOfPlace_ holds the block rewritten
    /// Inputs of the ops that write the params: out of place only while all are dense.
    std::vector<std::string> writerInputs;
  };
  std::vector<BlockPlan> blocks_; ///< by block index
  proto::Program outOfPlace_;
  std::atomic<uint64_t> fresh_{0}, copied_{0};

  bool sharedVersion(const BlockPlan &plan, Scope &scope) const;
  bool denseInputs(const BlockPlan &plan, Scope &scope) const;
};

} // namespace oar::runtime
