// A collective group's all-reduces on a thread of their own, so that a trainer's backward goes
// on while the gradients it has finished are summed (gradient buckets, as PyTorch DDP's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

class CollectiveGroup;

/// Runs allreduceMean of each started bucket on one thread, in the order started: every rank
/// starts the same buckets in the same order, so the ranks' collectives pair up. While a bucket
/// runs, the group must run nothing else: wait for every bucket before another collective.
class BackgroundAllreduce {
public:
  /// `timeout` bounds each bucket's wait (its all-reduce ends by the group's own timeout).
  BackgroundAllreduce(CollectiveGroup &group, std::chrono::milliseconds timeout);
  /// Lets the buckets still running end (each by the group's timeout), then stops the thread.
  ~BackgroundAllreduce();

  /// Starts averaging `parts` in place as bucket `bucket`; they stay alive and untouched until
  /// wait(bucket). An error when `bucket` was started and not waited for.
  llvm::Error start(int64_t bucket, std::vector<llvm::MutableArrayRef<float>> parts);
  llvm::Error start(int64_t bucket, std::vector<llvm::MutableArrayRef<double>> parts);
  /// Waits for bucket `bucket`'s all-reduce; its error, if it failed.
  llvm::Error wait(int64_t bucket);

private:
  using Parts = std::variant<std::vector<llvm::MutableArrayRef<float>>,
                             std::vector<llvm::MutableArrayRef<double>>>;
  llvm::Error enqueue(int64_t bucket, Parts parts);
  void run();

  CollectiveGroup &group_;
  std::chrono::milliseconds timeout_;
  std::mutex lock_;
  std::condition_variable changed_;
  struct Job {
    int64_t bucket;
    Parts parts;
  };
  std::deque<Job> queue_;
  struct Outcome {
    bool done = false;
    std::string error; ///< "" when it succeeded
  };
  std::map<int64_t, Outcome> state_; ///< buckets started and not yet waited for
  bool stopping_ = false;
  std::thread thread_; ///< started last: it reads the members above
};

} // namespace oar::runtime
