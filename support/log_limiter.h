// Rate limits on the lines a server logs about what its peers send.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

/// A flood of junk from one peer must not flood the log (or the disk under it): up to `burst`
/// lines per source (a peer's address) per `window`. The first line let through after some were
/// held back reports how many. At most kMaxSources sources are tracked; past that, sources whose
/// window has ended are forgotten, and if none has, the newcomers share one budget. All sources
/// together get kSourcesPerTotal bursts per window: 300 peers of 5 lines each made 1,399 lines.
class LogLimiter {
public:
  using Clock = std::chrono::steady_clock;
  explicit LogLimiter(int burst = 5, Clock::duration window = std::chrono::seconds(10))
      : burst_(burst), window_(window) {}
  /// Whether a line about `source` may be logged at `now`. `held` gets how many lines about it
  /// were held back since the last one let through.
  bool allow(const std::string &source, int64_t &held, Clock::time_point now = Clock::now());

  static constexpr size_t kMaxSources = 1024;
  static constexpr int kSourcesPerTotal = 20;

private:
  struct Source {
    Clock::time_point windowStart;
    int lines = 0;
    int64_t held = 0;
  };
  Source &sourceFor(const std::string &source, Clock::time_point now);
  int burst_;
  Clock::duration window_;
  llvm::StringMap<Source> sources_;
  Source total_; ///< every source's lines in the current window
};

} // namespace oar::runtime
