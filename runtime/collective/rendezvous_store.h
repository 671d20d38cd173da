// A rank's side of the rendezvous: Gloo's Store interface over a channel to rank 0's store.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

#include <gloo/rendezvous/store.h>

#include "runtime/transport/channel.h"

namespace oar::runtime {

/// Why a store request failed; Gloo's calls into the store can only throw. The group that
/// called Gloo turns it into an llvm::Error.
struct StoreFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Every call waits at most `timeout` in all, and ends early on shouldStop().
class RendezvousStore : public gloo::rendezvous::Store {
public:
  RendezvousStore(std::unique_ptr<Channel> channel, std::string endpoint, std::string jobId,
                  int rank, std::chrono::milliseconds timeout, std::function<bool()> shouldStop);

  void set(const std::string &key, const std::vector<char> &data) override;
  /// Waits for `key` as Gloo's stores do, then reads it.
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &timeout) override;

private:
  /// Sends `request` and returns the answer to it (an older answer is skipped).
  struct Answer;
  Answer ask(int kind, const std::string &key, const std::string &value,
             std::chrono::milliseconds timeout);

  std::unique_ptr<Channel> channel_;
  std::string endpoint_, jobId_;
  int rank_;
  std::chrono::milliseconds timeout_;
  std::function<bool()> shouldStop_;
  uint64_t seq_ = 0;
};

} // namespace oar::runtime
