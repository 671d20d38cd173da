// The thread that runs a trainer's gradient buckets' all-reduces.
#include "runtime/collective/background_allreduce.h"

#include "runtime/collective/collective_group.h"
#include "support/error.h"

namespace oar::runtime {

BackgroundAllreduce::BackgroundAllreduce(CollectiveGroup &group, std::chrono::milliseconds timeout)
    : group_(group), timeout_(timeout), thread_([this] { run(); }) {}

BackgroundAllreduce::~BackgroundAllreduce() {
  {
    std::lock_guard<std::mutex> hold(lock_);
    stopping_ = true;
    queue_.clear(); // a rank that stops mid-step starts no more: its peers see it gone
  }
  changed_.notify_all();
  thread_.join();
}

llvm::Error BackgroundAllreduce::start(int64_t bucket,
                                       std::vector<llvm::MutableArrayRef<float>> parts) {
  return enqueue(bucket, std::move(parts));
}
llvm::Error BackgroundAllreduce::start(int64_t bucket,
                                       std::vector<llvm::MutableArrayRef<double>> parts) {
  return enqueue(bucket, std::move(parts));
}

llvm::Error BackgroundAllreduce::enqueue(int64_t bucket, Parts parts) {
  {
    std::lock_guard<std::mutex> hold(lock_);
    if (!state_.emplace(bucket, Outcome()).second)
      return makeError("gradient bucket {0} was started again before its wait", bucket);
    queue_.push_back({bucket, std::move(parts)});
  }
  changed_.notify_all();
  return llvm::Error::success();
}

llvm::Error BackgroundAllreduce::wait(int64_t bucket) {
  std::unique_lock<std::mutex> hold(lock_);
  auto it = state_.find(bucket);
  if (it == state_.end())
    return makeError("gradient bucket {0} is waited for but was not started this step", bucket);
  // Each bucket ahead of this one ends by the group's timeout: so does this wait.
  auto limit = timeout_ * static_cast<int64_t>(queue_.size() + 2);
  if (!changed_.wait_for(hold, limit, [&] { return it->second.done; }))
    return makeError("gradient bucket {0}'s all-reduce did not end within {1} ms", bucket,
                     limit.count());
  std::string error = std::move(it->second.error);
  state_.erase(it);
  return error.empty() ? llvm::Error::success() : makeError("{0}", error);
}

void BackgroundAllreduce::run() {
  std::unique_lock<std::mutex> hold(lock_);
  while (true) {
    changed_.wait(hold, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) // stopping, nothing left
      return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    hold.unlock();
    llvm::Error err =
        std::visit([&](auto &parts) { return group_.allreduceMean(parts); }, job.parts);
    Outcome outcome{true, err ? llvm::toString(std::move(err)) : std::string()};
    hold.lock();
    state_[job.bucket] = std::move(outcome);
    changed_.notify_all();
  }
}

} // namespace oar::runtime
