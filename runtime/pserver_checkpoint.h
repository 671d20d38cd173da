// A pserver's periodic checkpoints: its blocks, optimizer state and tables at a step.
#pragma once

#include <optional>
#include <string>

#include "executor/tensor.h"
#include "ir/program.pb.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

class PserverTables;

/// Checkpoints live in `dir` (one per pserver) as step-<N>/, each holding <var>.npy, tables/ and
/// MANIFEST. One is written under a temporary name, every file synced, MANIFEST last, then
/// renamed into place; a directory without a MANIFEST naming every file at its size (a pserver
/// killed while writing) is never loaded.
class PserverCheckpoints {
public:
  /// `digest` ties checkpoints to the job's plan: another job's are not loaded.
  PserverCheckpoints(std::string dir, std::string digest, int keep)
      : dir_(std::move(dir)), digest_(std::move(digest)), keep_(keep) {}

  /// Writes step `step` of the persistable vars of `program` in `scope` and of `tables`, then
  /// removes all but the newest `keep` complete checkpoints and any torn ones.
  llvm::Error write(int64_t step, const proto::Program &program, const Scope &scope,
                    const PserverTables &tables) const;
  /// The newest complete checkpoint of this job, if any.
  std::optional<int64_t> latest() const;
  /// Loads step `step` into `scope` and `tables` (which must hold no rows).
  llvm::Error load(int64_t step, const proto::Program &program, Scope &scope,
                   PserverTables &tables) const;
  std::string pathOf(int64_t step) const;

private:
  /// Whether `path` is a complete checkpoint of this job (its MANIFEST matches its files).
  bool complete(const std::string &path) const;
  std::string dir_, digest_;
  int keep_;
};

} // namespace oar::runtime
