// The rendezvous store's server: SET and GET on a thread, strangers and other jobs refused.
#include "runtime/collective/rendezvous_server.h"

#include <atomic>
#include <map>
#include <thread>

#include "runtime/collective/collective_group.h"
#include "runtime/collective/rendezvous.pb.h"
#include "runtime/transport/router_server.h"
#include "support/error.h"

namespace oar::runtime {

namespace {
std::string encode(proto::StoreMsg reply) {
  reply.set_version(kProtocolVersion);
  return reply.SerializeAsString();
}

/// A refusal of the request numbered `seq`.
proto::StoreMsg refusalOf(uint64_t seq, const std::string &why) {
  proto::StoreMsg reply;
  reply.set_kind(proto::STORE_ERROR);
  reply.set_seq(seq);
  reply.set_error(why);
  return reply;
}
} // namespace

struct RendezvousServer::Impl {
  RendezvousOptions opts;
  std::unique_ptr<RouterServer> server;
  std::map<std::string, std::string> values;
  std::atomic<bool> stopping{false};
  std::thread thread;

  void log(const std::string &line) {
    if (opts.log)
      opts.log("rendezvous " + opts.endpoint + ": " + line);
  }

  void answer(const std::string &identity, const proto::StoreMsg &reply) {
    // A rank that went away or stopped reading: it asks again, or its timeout tells it.
    llvm::consumeError(server->sendBytes(identity, encode(reply)));
  }

  void refuse(const Incoming &from, const proto::StoreMsg &request, const std::string &why) {
    server->logRefusal(from, "refused a request: " + why);
    answer(from.peer, refusalOf(request.seq(), why));
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

  void serveOne(const Incoming &from) {
    proto::StoreMsg request;
    std::optional<llvm::StringRef> body = from.frames.single();
    if (!body || !request.ParseFromArray(body->data(), static_cast<int>(body->size())) ||
        request.version() != kProtocolVersion)
      return refuse(from, request, "not a rendezvous message of this oar version");
    if (std::string why = refusal(request); !why.empty())
      return refuse(from, request, why);
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
    answer(from.peer, reply);
  }

  void serve() {
    bool saidReceiveFailed = false;
    while (!stopping) {
      try {
        auto got = server->receive(std::chrono::milliseconds(100));
        if (!got) { // said once; the ranks' timeouts name the rendezvous if it stays so
          std::string why = llvm::toString(got.takeError());
          if (!saidReceiveFailed)
            log("a receive failed: " + why);
          saidReceiveFailed = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        } else if (got->message)
          serveOne(*got->message);
      } catch (const std::exception &e) { // memory: this request is lost, not the job
        log(std::string("a request failed: ") + e.what());
      }
    }
  }
};

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

llvm::Expected<std::unique_ptr<RendezvousServer>>
RendezvousServer::start(RendezvousOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->opts = std::move(options);
  const RendezvousOptions &o = impl->opts;
  RouterSpec spec;
  spec.socket.endpoint = o.endpoint, spec.socket.bind = o.bind, spec.socket.curve = o.curve;
  spec.socket.allowed = o.curve.allowed;
  if (o.curve.enabled())
    spec.socket.allowed.insert(o.curve.own->publicKey);
  spec.socket.risk = "join the job as a rank", spec.socket.serving = "serving the rendezvous on";
  spec.socket.held = o.heldPort;
  spec.socket.log = [impl = impl.get()](const std::string &line) { impl->log(line); };
  spec.name = "this rendezvous";
  spec.refusal = [](const std::string &why) { return encode(refusalOf(0, why)); };
  spec.maxMessageBytes = static_cast<int64_t>(kMaxValueBytes + 4096);
  auto server = RouterServer::open(std::move(spec));
  if (!server)
    return makeError("rendezvous {0}: {1}", o.endpoint, llvm::toString(server.takeError()));
  impl->server = std::move(*server);
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
