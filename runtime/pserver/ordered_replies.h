// A pserver's replies, in request order per peer, some of them made by service threads.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "executor/tensor.h"
#include "runtime/wire/message.pb.h"

namespace oar::runtime {

/// A trainer matches replies to its requests by order, per connection. Some replies (async
/// params, read between two updates) are made on service threads and finish out of order; this
/// keeps each peer's replies in request order. ZeroMQ sockets are not thread safe, so only the
/// socket's thread sends: service threads fill reserved places and wake it through an eventfd.
class OrderedReplies {
public:
  using SendFn =
      std::function<void(const std::string &peer, const proto::MsgHeader &, const Tensor *)>;
  /// A reply's place in its peer's order.
  struct Slot {
    proto::MsgHeader header;
    Tensor tensor; ///< uninitialised when the reply carries none
    bool ready = false;
  };

  explicit OrderedReplies(SendFn send);
  ~OrderedReplies();
  OrderedReplies(const OrderedReplies &) = delete;
  OrderedReplies &operator=(const OrderedReplies &) = delete;

  /// False when the eventfd could not be made.
  bool valid() const { return fd_ >= 0; }
  /// Readable once a service thread filled a place (the server waits on it).
  int fd() const { return fd_; }

  /// Socket thread: sends now, or queues behind the replies still owed to the same peer.
  void send(const std::string &peer, const proto::MsgHeader &header, const Tensor *tensor);
  /// Socket thread: holds the peer's next place for a reply made later.
  std::shared_ptr<Slot> reserve(const std::string &peer);
  /// Any thread: fills a reserved place.
  void fill(const std::shared_ptr<Slot> &slot, proto::MsgHeader header, Tensor tensor);
  /// Socket thread: sends every reply whose turn has come.
  void flush();
  /// Socket thread: whether any reply is still owed.
  bool owing() const { return owed_ > 0; }

private:
  SendFn send_;
  int fd_ = -1;
  std::mutex mutex_; ///< guards the slots' contents and `ready`
  std::map<std::string, std::deque<std::shared_ptr<Slot>>> queues_;
  size_t owed_ = 0; ///< slots queued, over all peers
};

} // namespace oar::runtime
