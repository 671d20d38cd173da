// Service threads that own a pserver's optimize blocks.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// Runs each task on the thread its caller names. The pserver gives every optimize block one
/// thread for life, so a block's vars need no locks, no update is torn, and different blocks
/// update at once; a thread runs its tasks in the order they were posted. With zero threads a
/// task runs on the caller, inside post().
class ServiceThreads {
public:
  using Task = std::function<llvm::Error()>;

  explicit ServiceThreads(int threads);
  /// Runs what was posted, then joins.
  ~ServiceThreads();

  /// 0 when tasks run on the caller.
  int size() const { return static_cast<int>(queues_.size()); }
  /// Queues `task` on thread `thread % size()`.
  void post(int thread, Task task);
  /// Waits until every task posted so far has run; returns the first error a task returned
  /// (and keeps returning it).
  llvm::Error drain();
  /// The first error a task returned, without waiting.
  std::optional<std::string> failure();

private:
  struct Queue {
    std::deque<Task> tasks;
  };
  void serve(size_t index);
  void record(llvm::Error err);
  /// Keeps the first error of any task; mutex_ held.
  void keepFirst(llvm::Error err);

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<Queue> queues_;
  std::vector<std::thread> threads_;
  size_t running_ = 0; ///< tasks taken off a queue and not finished
  bool stopping_ = false;
  std::optional<std::string> failure_;
};

} // namespace oar::runtime
