// The rendezvous store's server: SET and GET on a thread, strangers and other jobs refused.
#include "runtime/collective/rendezvous_server.h"

#include <atomic>
#include <map>
#include <thread>

#include "runtime/collective/collective_group.h"
#include "runtime/collective/rendezvous.pb.h"
#include "runtime/security/peer_identity.h"
#include "runtime/security/zap_handler.h"
#include "runtime/transport/server_socket.h"
#include "runtime/wire/protocol.h"
#include "support/error.h"
#include "support/log_limiter.h"

namespace oar::runtime {

struct RendezvousServer::Impl {
  RendezvousOptions opts;
  zmq::context_t context{1};
  zmq::socket_t socket{context, zmq::socket_type::router};
  std::unique_ptr<ZapHandler> zap;
  bool ownUserOnly = false;
  std::map<std::string, std::string> values;
  std::atomic<bool> stopping{false};
  std::thread thread;
  LogLimiter limiter;

  void log(const std::string &line) {
    if (opts.log)
      opts.log("rendezvous " + opts.endpoint + ": " + line);
  }

  void answer(const std::string &identity, proto::StoreMsg reply) {
    reply.set_version(kProtocolVersion);
    std::string bytes = reply.SerializeAsString();
    try {
      socket.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      socket.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    } catch (const zmq::error_t &) {
      // A rank that went away or stopped reading: it asks again, or its timeout tells it.
    }
  }

  void refuse(const std::string &identity, const proto::StoreMsg &request, const std::string &why,
              const std::string &from) {
    int64_t held = 0;
    if (limiter.allow(from, held))
      log("refused a request from " + from + ": " + why +
          (held ? " (" + std::to_string(held) + " more lines from it held back)" : ""));
    proto::StoreMsg reply;
    reply.set_kind(proto::STORE_ERROR);
    reply.set_seq(request.seq());
    reply.set_error(why);
    answer(identity, reply);
  }

  /// Why `request` is refused, or "".
  std::string refusal(const proto::StoreMsg &request) const {
    if (request.job_id() != opts.jobId)
      return "a rank of another job (" + request.job_id() + "; this one is " + opts.jobId + ")";
    if (request.rank() < 0 || request.rank() >= opts.ranks)
      return "rank " + std::to_string(request.rank()) + " is not in a job of " +
             std::to_string(opts.ranks) + " ranks";
    if (request.kind() == proto::STORE_SET) {
      if (request.value().size() > kMaxValueBytes)
        return "a value of " + std::to_string(request.value().size()) + " bytes (at most " +
               std::to_string(kMaxValueBytes) + ")";
      // Gloo's keys name their rank ("2", "rank_2"), after a stream's prefix ("s1/rank_2"):
      // each rank writes its own, and only those.
      std::string own = std::to_string(request.rank());
      llvm::StringRef key = request.key();
      if (key.startswith("s") && key.contains('/')) {
        auto [prefix, rest] = key.drop_front().split('/');
        unsigned stream = 0;
        if (!prefix.getAsInteger(10, stream) && stream > 0 &&
            stream < unsigned(CollectiveOptions::kMaxStreams))
          key = rest;
      }
      // A rank's host ("host_2", shared_segment.h's sameHostKey) and rank 0's shared segment.
      if (key != own && key != "rank_" + own && key != "host_" + own && key != "segment_" + own)
        return "rank " + own + " may write only its own keys (\"" + own + "\", \"rank_" + own +
               "\", \"host_" + own + "\", \"segment_" + own + "\"), not \"" + request.key() + "\"";
      // Written once: a value other ranks may have read already (rank 0's segment name, a
      // rank's address) cannot be swapped for another. The same value again is a resend.
      if (auto it = values.find(request.key()); it != values.end() && it->second != request.value())
        return "\"" + request.key() + "\" is written already (a key is written once)";
      if (!values.count(request.key()) && values.size() >= kMaxKeys)
        return "the store holds " + std::to_string(kMaxKeys) + " keys already";
    } else if (request.kind() != proto::STORE_GET) {
      return "neither a SET nor a GET";
    }
    return "";
  }

  void serveOne(std::vector<zmq::message_t> &frames) {
    std::string identity(static_cast<const char *>(frames[0].data()), frames[0].size());
    std::string from = peerAddress(frames.back());
    proto::StoreMsg request;
    if (ownUserOnly)
      if (std::string why = strangerRefusal(frames.back(), "this rendezvous"); !why.empty())
        return refuse(identity, request, why, from);
    if (frames.size() != 2 ||
        !request.ParseFromArray(frames[1].data(), static_cast<int>(frames[1].size())) ||
        request.version() != kProtocolVersion)
      return refuse(identity, request, "not a rendezvous message of this oar version", from);
    if (std::string why = refusal(request); !why.empty())
      return refuse(identity, request, why, from);
    proto::StoreMsg reply;
    reply.set_seq(request.seq());
    reply.set_key(request.key());
    if (request.kind() == proto::STORE_SET) {
      values[request.key()] = request.value();
      reply.set_kind(proto::STORE_OK);
    } else if (auto it = values.find(request.key()); it != values.end()) {
      reply.set_kind(proto::STORE_VALUE);
      reply.set_value(it->second);
    } else {
      reply.set_kind(proto::STORE_MISSING);
    }
    answer(identity, reply);
  }

  void serve() {
    while (!stopping) {
      std::optional<std::vector<zmq::message_t>> frames;
      try {
        frames = receiveFrames(socket, std::chrono::milliseconds(100));
      } catch (const zmq::error_t &) { // EINTR: a signal; the loop looks at `stopping`
        continue;
      }
      try {
        if (frames && frames->size() >= 2)
          serveOne(*frames);
      } catch (const std::exception &e) { // memory, or libzmq: this request is lost, not the job
        log(std::string("a request failed: ") + e.what());
      }
    }
  }
};

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

llvm::Expected<std::unique_ptr<RendezvousServer>>
RendezvousServer::start(RendezvousOptions options) {
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>();
  } catch (const zmq::error_t &e) {
    return makeError("rendezvous {0}: cannot open its socket: {1}", options.endpoint, e.what());
  }
  impl->opts = std::move(options);
  const RendezvousOptions &o = impl->opts;
  try {
    impl->socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(kMaxValueBytes + 4096));
    impl->socket.set(zmq::sockopt::linger, 0);
  } catch (const zmq::error_t &e) {
    return makeError("rendezvous {0}: cannot set its socket's options: {1}", o.endpoint, e.what());
  }
  ServerSocketSpec spec;
  spec.endpoint = o.endpoint, spec.bind = o.bind, spec.curve = o.curve;
  spec.allowed = o.curve.allowed;
  if (o.curve.enabled())
    spec.allowed.insert(o.curve.own->publicKey);
  spec.risk = "join the job as a rank", spec.serving = "serving the rendezvous on";
  spec.held = o.heldPort;
  spec.log = [impl = impl.get()](const std::string &line) { impl->log(line); };
  auto serving = serveOn(impl->context, impl->socket, std::move(spec));
  if (!serving)
    return makeError("rendezvous {0}: {1}", o.endpoint, llvm::toString(serving.takeError()));
  impl->zap = std::move(serving->zap);
  impl->ownUserOnly = serving->ownUserOnly;
  Impl *i = impl.get();
  try {
    impl->thread = std::thread([i] { i->serve(); });
  } catch (const std::system_error &e) {
    return makeError("rendezvous {0}: cannot start its thread: {1}", o.endpoint, e.what());
  }
  return std::unique_ptr<RendezvousServer>(new RendezvousServer(std::move(impl)));
}

RendezvousServer::~RendezvousServer() {
  impl_->stopping = true;
  if (impl_->thread.joinable())
    impl_->thread.join();
}

} // namespace oar::runtime
