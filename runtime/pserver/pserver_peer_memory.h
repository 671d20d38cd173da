// A pserver's side of same-host peer memory: which trainers it reads and writes, what it keeps
// alive for them, and what moved that way.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/pserver/gradient_landings.h"
#include "runtime/wire/protocol.h"

namespace oar::runtime {

class PserverPeerMemory {
public:
  /// Sync mode: landings are the trainers' copies that the step's barrier sums.
  void setSync(bool sync) { sync_ = sync; }
  void resize(size_t trainers) { trainerPid_.resize(trainers, 0); }
  /// Trainer `t`'s HELLO: checks its probe (its large gradients are then written into our
  /// memory: the landings of `grads` go into `reply`), and offers our probe to a trainer of
  /// this host and user.
  void greet(int64_t t, const Message &hello, Scope &scope,
             const llvm::StringMap<ops::VarType> &grads, proto::MsgHeader &reply);
  /// The process of trainer `t` whose probe read back, else 0.
  pid_t trainerPid(int64_t t) const { return trainerPid_[t]; }
  /// A SEND_VAR of trainer `t`: a landed gradient must come from the process its landing was
  /// announced to; a payload in the trainer's memory is read into `m.payload`.
  llvm::Error receive(int64_t t, Message &m);
  /// Whether trainer `t`'s copy of `grad` is a landing (it must keep its buffer).
  bool hasLanding(int64_t t, llvm::StringRef grad) const { return landings_.has(t, grad); }
  /// Async: trainer `t`'s landing of `grad`, which a block reads where the trainer wrote it.
  Tensor landing(int64_t t, llvm::StringRef grad) const { return landings_.landing(t, grad); }
  /// Trainer `t` left: its landings are retired (see GradientLandings) and what it was reading
  /// is let go.
  void retire(int64_t t, Scope &scope);
  /// Marks the reply `h` to `request` as lying in our memory at `value` when the request
  /// accepts it (see acceptsFrom) and `value` is worth it; keeps `value` alive until the same
  /// trainer fetches in a later round. Any thread.
  void serve(const proto::MsgHeader &request, proto::MsgHeader &h, const Tensor &value);
  /// Clears a GET_VAR's accepts_peer_memory unless it came from a process of this host and user:
  /// nobody else learns our addresses.
  static void acceptsFrom(Message &request);
  /// "peer memory: ..." counts for the last log line, or "" when nothing moved that way.
  std::string summary() const;

private:
  bool sync_ = true;
  std::vector<pid_t> trainerPid_;
  GradientLandings landings_;
  /// What a trainer's latest fetch round reads of our memory.
  struct Served {
    uint64_t round = 0;
    std::vector<std::shared_ptr<std::byte>> buffers;
  };
  std::mutex servedMutex_; ///< service threads serve async param versions
  std::map<int64_t, Served> served_; ///< by trainer
  std::atomic<uint64_t> landedCount_{0}, readCount_{0}, servedCount_{0};
  void forgetServed(int64_t t);
};

} // namespace oar::runtime
