// What a pserver keeps of each trainer of its job: where it is, how it went, the connection it
// said HELLO on.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oar::runtime {

struct TrainerSlot {
  using Clock = std::chrono::steady_clock;
  /// Sync: the step its next send_barrier closes (every step before it is closed).
  int64_t barrierRound = 0;
  /// The step of its last accepted message.
  int64_t lastStep = 0;
  /// Async and GEO: its step in the checkpoint this pserver resumed from.
  int64_t resumedFrom = 0;
  bool completed = false;
  /// Lost: silent far longer than the others, or gone (the scheduler says); never waited for
  /// again, its messages refused.
  bool lost = false;
  /// The error it completed with, if it failed.
  std::optional<std::string> failure;
  /// The connection (routing id) it said HELLO on; empty until it has. Anything else it sends
  /// must come on that connection: a pserver restarted under a running job, or a peer that
  /// never said HELLO, cannot complete a trainer or feed it gradients.
  std::string helloPeer;
  Clock::time_point lastSeen = Clock::now();

  bool live() const { return !completed && !lost; }
};

/// The trainers a pserver keeps state for: the job's count, and any that joined (elastic), by id.
class TrainerSlots {
public:
  explicit TrainerSlots(int64_t count = 0) : slots_(static_cast<size_t>(count)) {}

  int64_t size() const { return static_cast<int64_t>(slots_.size()); }
  TrainerSlot &operator[](int64_t t) { return slots_[static_cast<size_t>(t)]; }
  const TrainerSlot &operator[](int64_t t) const { return slots_[static_cast<size_t>(t)]; }
  auto begin() { return slots_.begin(); }
  auto end() { return slots_.end(); }

  bool anyLive() const;
  /// The ids whose slot `pick` holds for, in order.
  template <typename Pick> std::vector<int64_t> ids(Pick pick) const {
    std::vector<int64_t> out;
    for (int64_t t = 0; t < size(); ++t)
      if (pick(slots_[t]))
        out.push_back(t);
    return out;
  }
  /// Elastic async: makes room for trainer `t`, which joined the running job. Slots between the
  /// old ones and `t` (ids the scheduler has not given) count as completed.
  void add(int64_t t);

  /// "0, 2, 3".
  static std::string list(const std::vector<int64_t> &ids);

private:
  std::vector<TrainerSlot> slots_;
};

} // namespace oar::runtime
