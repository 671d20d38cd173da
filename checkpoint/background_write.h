// A checkpoint's files written off the training thread: the caller takes a copy of what the
// checkpoint holds (a memcpy of the model), and a thread of its own writes and syncs the files
// while training goes on. One write at a time.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "executor/tensor.h"
#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

class BackgroundWrite {
public:
  BackgroundWrite() = default;
  BackgroundWrite(const BackgroundWrite &) = delete;
  BackgroundWrite &operator=(const BackgroundWrite &) = delete;
  /// Waits for the write in flight.
  ~BackgroundWrite();

  /// Waits for the write in flight, then runs `write` on a thread of its own (with
  /// OAR_CHECKPOINT_WRITES=inline in the environment: here, for comparison). An error of the
  /// write it waited for comes back here, and `write` does not start.
  llvm::Error start(std::function<llvm::Error()> write);
  /// Waits for the write in flight; returns its error (once).
  llvm::Error wait();
  /// Waits for the write in flight, keeping its error for the next wait() or start().
  void join();

private:
  std::thread thread_;
  std::string failure_; ///< the last write's error, written by its thread before it ends
};

/// A copy of every persistable var of `program`'s block 0 that `scope` holds: what a checkpoint
/// of that moment holds, while the originals change.
Scope copyPersistables(const proto::Program &program, const Scope &scope);

} // namespace oar
