// What a pserver reads, lets be written, and keeps alive for trainers of its host.
#include "runtime/pserver/pserver_peer_memory.h"

#include "runtime/wire/peer_memory.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

void PserverPeerMemory::greet(int64_t t, const Message &hello, Scope &scope,
                              const llvm::StringMap<ops::VarType> &grads, proto::MsgHeader &reply) {
  pid_t pid = verifiedPeerPid(hello.header, hello.senderPid);
  trainerPid_[t] = pid;
  forgetServed(t); // a new connection: nothing is read on the old one any more
  if (hello.senderPid != 0)
    offerPeerMemory(reply);
  reply.set_reads_peer_memory(pid != 0);
  if (pid && landingsEnabled())
    landings_.offer(scope, sync_, t, grads, reply);
  else // whoever said HELLO as `t` before may not write where it was told any more
    landings_.retire(scope, sync_, t);
}

llvm::Error PserverPeerMemory::receive(int64_t t, Message &m) {
  const proto::MsgHeader &h = m.header;
  if (h.landed()) {
    if (!landings_.has(t, h.var()) || trainerPid_[t] == 0 || m.senderPid != trainerPid_[t])
      return makeError("trainer {0} says it wrote {1} into this pserver's memory, but no place "
                       "for it was announced to that process",
                       t, h.var());
    ++landedCount_;
    return llvm::Error::success();
  }
  if (!m.inPeerMemory())
    return llvm::Error::success();
  if (llvm::Error err = readPeerPayload(m, trainerPid_[t], "trainer " + std::to_string(t)))
    return err;
  ++readCount_;
  return llvm::Error::success();
}

void PserverPeerMemory::retire(int64_t t, Scope &scope) {
  landings_.retire(scope, sync_, t);
  forgetServed(t);
}

void PserverPeerMemory::acceptsFrom(Message &request) {
  if (request.header.accepts_peer_memory() && request.senderPid == 0)
    request.header.clear_accepts_peer_memory();
}

void PserverPeerMemory::serve(const proto::MsgHeader &request, proto::MsgHeader &h,
                              const Tensor &value) {
  if (!request.accepts_peer_memory() || !worthPeerMemory(&value, kPeerParamMinBytes))
    return;
  placeInPeerMemory(h, value);
  ++servedCount_;
  std::lock_guard<std::mutex> lock(servedMutex_);
  // A trainer sends a later round's fetches only after it read every reply of the earlier ones
  // (each round trip reads all its replies before it returns).
  Served &kept = served_[request.trainer_id()];
  if (request.fetch_round() > kept.round) {
    kept.round = request.fetch_round();
    kept.buffers.clear();
  }
  kept.buffers.push_back(value.buffer());
}

void PserverPeerMemory::forgetServed(int64_t t) {
  std::lock_guard<std::mutex> lock(servedMutex_);
  served_.erase(t);
}

std::string PserverPeerMemory::summary() const {
  if (landedCount_ + readCount_ + servedCount_ == 0)
    return "";
  return llvm::formatv("peer memory: {0} gradients written here by trainers, {1} read from "
                       "theirs, {2} params read from ours",
                       landedCount_.load(), readCount_.load(), servedCount_.load())
      .str();
}

} // namespace oar::runtime
