// Replies in request order per peer.
#include "runtime/pserver/ordered_replies.h"

#include <cstdint>
#include <sys/eventfd.h>
#include <unistd.h>

namespace oar::runtime {

OrderedReplies::OrderedReplies(SendFn send)
    : send_(std::move(send)), fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}

OrderedReplies::~OrderedReplies() {
  if (fd_ >= 0)
    close(fd_);
}

void OrderedReplies::send(const std::string &peer, const proto::MsgHeader &header,
                          const Tensor *tensor) {
  auto it = queues_.find(peer);
  if (it == queues_.end() || it->second.empty()) {
    send_(peer, header, tensor);
    return;
  }
  auto slot = std::make_shared<Slot>();
  slot->header = header;
  if (tensor)
    slot->tensor = *tensor; // shares the buffer, as a zero-copy send would
  slot->ready = true;
  it->second.push_back(std::move(slot));
  ++owed_;
}

std::shared_ptr<OrderedReplies::Slot> OrderedReplies::reserve(const std::string &peer) {
  auto slot = std::make_shared<Slot>();
  queues_[peer].push_back(slot);
  ++owed_;
  return slot;
}

void OrderedReplies::fill(const std::shared_ptr<Slot> &slot, proto::MsgHeader header,
                          Tensor tensor) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot->header = std::move(header);
    slot->tensor = std::move(tensor);
    slot->ready = true;
  }
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof one); // fails only when the count is full
}

void OrderedReplies::flush() {
  if (owed_ == 0)
    return;
  uint64_t count;
  [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof count); // EAGAIN when none was filled
  for (auto &[peer, queue] : queues_) {
    for (;;) {
      std::shared_ptr<Slot> head;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (queue.empty() || !queue.front()->ready)
          break;
        head = std::move(queue.front());
        queue.pop_front();
      }
      --owed_;
      send_(peer, head->header, head->tensor.initialized() ? &head->tensor : nullptr);
    }
  }
}

} // namespace oar::runtime
