// The rendezvous store's client: requests with numbers, waits with deadlines.
#include "runtime/collective/rendezvous_store.h"

#include "runtime/collective/rendezvous.pb.h"
#include "runtime/wire/protocol.h"
#include "support/deadline.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

struct RendezvousStore::Answer {
  bool found = false;
  std::string value;
};

RendezvousStore::RendezvousStore(std::unique_ptr<Channel> channel, std::string endpoint,
                                 std::string jobId, int rank, std::chrono::milliseconds timeout,
                                 std::function<bool()> shouldStop)
    : channel_(std::move(channel)), endpoint_(std::move(endpoint)), jobId_(std::move(jobId)),
      rank_(rank), timeout_(timeout), shouldStop_(std::move(shouldStop)) {}

RendezvousStore::Answer RendezvousStore::ask(int kind, const std::string &key,
                                             const std::string &value,
                                             std::chrono::milliseconds timeout) {
  proto::StoreMsg request;
  request.set_version(kProtocolVersion);
  request.set_kind(static_cast<proto::StoreKind>(kind));
  request.set_job_id(jobId_);
  request.set_rank(rank_);
  request.set_seq(++seq_);
  request.set_key(key);
  request.set_value(value);
  std::string bytes = request.SerializeAsString();
  Deadline deadline(timeout);
  if (llvm::Error err = channel_->send(encodeBytes(bytes), timeout))
    throw StoreFailure(llvm::formatv("cannot reach the rendezvous {0}: {1}", endpoint_,
                                     llvm::toString(std::move(err))));
  for (;;) {
    if (shouldStop_ && shouldStop_())
      throw StoreFailure("stopped by signal while waiting for the rendezvous " + endpoint_);
    if (deadline.passed())
      throw StoreFailure(llvm::formatv("no answer from the rendezvous {0} in {1:f1} s; is rank 0 "
                                       "running, and is the address right?",
                                       endpoint_, deadline.elapsedSeconds()));
    auto frames = channel_->receive(std::min(deadline.left(), std::chrono::milliseconds(200)));
    if (!frames)
      throw StoreFailure(
          llvm::formatv("the rendezvous {0}: {1}", endpoint_, llvm::toString(frames.takeError())));
    std::optional<llvm::StringRef> body = *frames ? (*frames)->single() : std::nullopt;
    proto::StoreMsg reply;
    if (!body || !reply.ParseFromArray(body->data(), static_cast<int>(body->size())))
      continue;
    if (reply.seq() != request.seq())
      continue; // the answer to a request that timed out earlier
    if (reply.kind() == proto::STORE_ERROR)
      throw StoreFailure(llvm::formatv("the rendezvous {0} refused rank {1}: {2}", endpoint_, rank_,
                                       reply.error()));
    return {reply.kind() == proto::STORE_VALUE || reply.kind() == proto::STORE_OK, reply.value()};
  }
}

void RendezvousStore::set(const std::string &key, const std::vector<char> &data) {
  ask(proto::STORE_SET, key, std::string(data.begin(), data.end()), timeout_);
}

std::vector<char> RendezvousStore::get(const std::string &key) {
  wait({key}, timeout_);
  Answer a = ask(proto::STORE_GET, key, "", timeout_);
  return std::vector<char>(a.value.begin(), a.value.end());
}

void RendezvousStore::wait(const std::vector<std::string> &keys,
                           const std::chrono::milliseconds &timeout) {
  Deadline deadline(timeout);
  Backoff backoff(std::chrono::milliseconds(10), std::chrono::milliseconds(200));
  // Each GET may take a second past the deadline: a live store answers in milliseconds, and one
  // that does not answer is another failure (ask's).
  for (const std::string &key : keys)
    while (
        !ask(proto::STORE_GET, key, "", std::max(deadline.left(), std::chrono::milliseconds(1000)))
             .found) {
      if (deadline.passed()) // Gloo's keys are the ranks' numbers
        throw StoreFailure(
            llvm::StringRef(key).find_first_not_of("0123456789") == llvm::StringRef::npos
                ? llvm::formatv("rank {0} has not joined the rendezvous {1} in {2:f1} s; is it "
                                "running?",
                                key, endpoint_, deadline.elapsedSeconds())
                      .str()
                : llvm::formatv("\"{0}\" is not in the rendezvous {1} after {2:f1} s", key,
                                endpoint_, deadline.elapsedSeconds())
                      .str());
      backoff.pause(deadline);
    }
}

} // namespace oar::runtime
