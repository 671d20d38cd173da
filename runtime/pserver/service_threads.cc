// The pserver's service threads.
#include "runtime/pserver/service_threads.h"

#include <omp.h>

namespace oar::runtime {

ServiceThreads::ServiceThreads(int threads) : queues_(threads > 0 ? threads : 0) {
  for (size_t i = 0; i < queues_.size(); ++i)
    threads_.emplace_back([this, i] { serve(i); });
}

ServiceThreads::~ServiceThreads() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &t : threads_)
    t.join();
}

void ServiceThreads::post(int thread, Task task) {
  if (queues_.empty()) {
    record(task());
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queues_[static_cast<size_t>(thread) % queues_.size()].tasks.push_back(std::move(task));
  }
  wake_.notify_all();
}

void ServiceThreads::serve(size_t index) {
  // Blocks update in parallel already: a kernel's OpenMP team of its own would oversubscribe.
  omp_set_num_threads(1);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    std::deque<Task> &mine = queues_[index].tasks;
    wake_.wait(lock, [&] { return stopping_ || !mine.empty(); });
    if (mine.empty()) // stopping, and nothing left to run
      return;
    Task task = std::move(mine.front());
    mine.pop_front();
    ++running_;
    lock.unlock();
    llvm::Error err = task();
    lock.lock();
    keepFirst(std::move(err));
    --running_;
    idle_.notify_all();
  }
}

void ServiceThreads::record(llvm::Error err) {
  std::lock_guard<std::mutex> lock(mutex_);
  keepFirst(std::move(err));
}

void ServiceThreads::keepFirst(llvm::Error err) {
  if (err && !failure_)
    failure_ = llvm::toString(std::move(err));
  else
    llvm::consumeError(std::move(err));
}

llvm::Error ServiceThreads::drain() {
  std::unique_lock<std::mutex> lock(mutex_);
  // No timeout: the tasks are local computations (optimizer updates, copies), not waits.
  idle_.wait(lock, [&] {
    if (running_ > 0)
      return false;
    for (const Queue &q : queues_)
      if (!q.tasks.empty())
        return false;
    return true;
  });
  if (failure_)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), *failure_);
  return llvm::Error::success();
}

std::optional<std::string> ServiceThreads::failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

} // namespace oar::runtime
