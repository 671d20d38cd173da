// Per-source log budgets.
#include "support/log_limiter.h"

#include <vector>

namespace oar::runtime {

LogLimiter::Source &LogLimiter::sourceFor(const std::string &source, Clock::time_point now) {
  if (auto it = sources_.find(source); it != sources_.end())
    return it->second;
  if (sources_.size() >= kMaxSources) { // forget the sources whose window has ended
    std::vector<std::string> done;
    for (const auto &entry : sources_)
      if (now - entry.getValue().windowStart >= window_ && entry.getValue().held == 0)
        done.push_back(entry.getKey().str());
    for (const std::string &k : done)
      sources_.erase(k);
  }
  if (sources_.size() >= kMaxSources)
    return sources_.try_emplace("(other peers)", Source{now}).first->second;
  return sources_.try_emplace(source, Source{now}).first->second;
}

bool LogLimiter::allow(const std::string &source, int64_t &held, Clock::time_point now) {
  Source &s = sourceFor(source, now);
  if (now - s.windowStart >= window_) {
    s.windowStart = now;
    s.lines = 0;
  }
  if (now - total_.windowStart >= window_) {
    total_.windowStart = now;
    total_.lines = 0;
  }
  if (s.lines >= burst_ || total_.lines >= burst_ * kSourcesPerTotal) {
    ++s.held;
    return false;
  }
  ++s.lines;
  ++total_.lines;
  held = s.held;
  s.held = 0;
  return true;
}

} // namespace oar::runtime
