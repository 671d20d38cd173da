// A pserver's periodic checkpoints: its blocks, optimizer state and tables at a step.
#pragma once

#include <optional>
#include <string>

#include "checkpoint/background_write.h"
#include "checkpoint/step_checkpoints.h"
#include "executor/save_set.h"
#include "executor/tensor.h"
#include "ir/program.pb.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

class PserverTables;

/// Checkpoints live in `dir` (one per pserver) as step-<N>/ (checkpoint/step_checkpoints.h),
/// each holding <block>.npy, the BLOCKS index that says which whole var each belongs to,
/// tables/ with this pserver's part of every table, and MANIFEST.
class PserverCheckpoints {
public:
  /// `digest` ties checkpoints to the job's plan: another job's are not loaded.
  PserverCheckpoints(std::string dir, std::string digest, int keep)
      : steps_(std::move(dir), std::move(digest), keep) {}

  /// Takes a copy of step `step`: the persistable vars of `program` in `scope` and the rows of
  /// `tables` (`fields` go in its MANIFEST); then, off the caller's thread, writes it and removes
  /// all but the newest `keep` complete checkpoints and any torn ones, and calls `written`. The
  /// write before it finishes first; its error comes back here.
  llvm::Error write(int64_t step, const proto::Program &program, const Scope &scope,
                    const PserverTables &tables,
                    const std::map<std::string, std::string> &fields = {},
                    std::function<void()> written = {});
  /// Waits for the write in flight; its error.
  llvm::Error finish() { return writer_.wait(); }
  /// The newest complete checkpoint of this job, if any (after the write in flight), and the
  /// fields of its MANIFEST.
  std::optional<int64_t> latest() {
    writer_.join();
    return steps_.latest();
  }
  std::map<std::string, std::string> fields(int64_t step) const {
    auto m = steps_.manifest(step);
    return m ? m->fields : std::map<std::string, std::string>{};
  }
  /// Loads step `step` into `scope` and `tables` (which must hold no rows).
  llvm::Error load(int64_t step, const proto::Program &program, Scope &scope,
                   PserverTables &tables);
  std::string pathOf(int64_t step) const { return steps_.pathOf(step); }
  /// After the write in flight, removes the checkpoints of steps after `step` (the job went
  /// back to it); that write's error.
  llvm::Error dropAfter(int64_t step) {
    llvm::Error err = writer_.wait();
    steps_.dropAfter(step);
    return err;
  }

private:
  StepCheckpoints steps_;
  BackgroundWrite writer_;
};

/// Writes `program`'s persistable vars of `scope` into `dir` as <var>.npy with the BLOCKS index
/// (checkpoint/pserver_blocks.h), staged in `files`.
llvm::Error stagePserverBlocks(const proto::Program &program, const Scope &scope,
                               llvm::StringRef dir, SaveSet &files);

} // namespace oar::runtime
