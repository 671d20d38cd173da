// Waiting with a budget: a deadline, and the growing pauses between retries. Every wait in oar
// has a timeout; these are the one way to write one.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace oar {

/// A moment `budget` after its making, on the steady clock.
class Deadline {
public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(std::chrono::milliseconds budget)
      : start_(Clock::now()), end_(start_ + budget) {}

  bool passed() const { return Clock::now() >= end_; }
  /// What is left of the budget, 0 once it passed.
  std::chrono::milliseconds left() const {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now()));
  }
  /// Seconds since its making, for messages ("after 8 attempts in 3.56 s").
  double elapsedSeconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  Clock::time_point end() const { return end_; }

private:
  Clock::time_point start_, end_;
};

/// Pauses between retries: `first`, then twice the last, at most `most`.
class Backoff {
public:
  Backoff(std::chrono::milliseconds first, std::chrono::milliseconds most)
      : next_(first), most_(most) {}
  /// Sleeps the next pause, cut short so it ends no later than `deadline`.
  void pause(const Deadline &deadline) {
    std::this_thread::sleep_for(std::min(next_, deadline.left()));
    next_ = std::min(next_ * 2, most_);
  }

private:
  std::chrono::milliseconds next_, most_;
};

} // namespace oar
