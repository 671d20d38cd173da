// ZmtpLink: a trainer's ZMTP connection without libzmq's I/O thread, against a real libzmq
// ROUTER and against scripted peers on a socket pair (what a broken or hostile peer sends).
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/cluster/launcher.h"
#include "runtime/trainer/communicator.h"
#include "runtime/transport/zmtp_link.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"
#include "llvm/Support/Endian.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;
using std::chrono::milliseconds;

namespace {

/// A frame's bytes as ZMTP puts them on the wire.
std::string frame(const std::string &body, uint8_t flags = 0) {
  std::string f;
  if (body.size() <= 255) {
    f += static_cast<char>(flags);
    f += static_cast<char>(body.size());
  } else {
    char size[8];
    llvm::support::endian::write64be(size, body.size());
    f += static_cast<char>(flags | 2);
    f.append(size, 8);
  }
  return f + body;
}

std::string greeting(const char *mechanism = "NULL") {
  std::string g(64, '\0');
  g[0] = '\xff', g[8] = 1, g[9] = 0x7f, g[10] = 3, g[11] = 1, g[32] = 1;
  std::memcpy(&g[12], mechanism, std::strlen(mechanism));
  return g;
}

std::string ready(const std::string &socketType) {
  std::string body = "\x05READY";
  body += static_cast<char>(11);
  body += "Socket-Type";
  char size[4];
  llvm::support::endian::write32be(size, socketType.size());
  body.append(size, 4);
  return frame(body + socketType, 4);
}

/// A peer scripted on one end of a socket pair; the link greets on the other end.
struct ScriptedPeer {
  ScriptedPeer() { REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0); }
  ~ScriptedPeer() {
    if (fds[0] >= 0)
      close(fds[0]);
  }
  void write(const std::string &bytes) {
    REQUIRE(::write(fds[0], bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  }
  llvm::Expected<std::unique_ptr<ZmtpLink>> greet(ZmtpLink::PayloadLimit limit = {}) {
    int linkEnd = fds[1];
    fds[1] = -1;
    return ZmtpLink::greet(linkEnd, "scripted peer", milliseconds(2000), std::move(limit));
  }
  int fds[2] = {-1, -1};
};

std::string text(const zmq::message_t &m) { return {m.data<char>(), m.size()}; }

/// The payload limit a test header announces: its first 8 bytes, as a number.
std::optional<uint64_t> announcedBySize(const zmq::message_t &header) {
  if (header.size() < 8)
    return std::nullopt;
  uint64_t n;
  std::memcpy(&n, header.data(), 8);
  return n;
}

std::string sizeHeader(uint64_t n) { return std::string(reinterpret_cast<char *>(&n), 8); }

} // namespace

TEST_CASE("a link talks to a libzmq ROUTER as a DEALER does, frames long and short",
          "[runtime][zmtp]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  std::string address = "ipc://@oar-zmtp-test-" + std::to_string(getpid());
  router.bind(address);
  auto link = requireValue(ZmtpLink::connect(address, milliseconds(2000), announcedBySize));
  CHECK(link->peerPid() == getpid()); // the kernel names the process that listens

  std::string payload(300, 'p'); // a long frame (more than 255 bytes)
  std::string head = "header";
  REQUIRE_OK(link->send(
      {llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(head.data()), head.size()),
       llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(payload.data()), payload.size())},
      milliseconds(1000)));
  std::vector<zmq::message_t> got;
  router.set(zmq::sockopt::rcvtimeo, 2000);
  REQUIRE(zmq::recv_multipart(router, std::back_inserter(got)));
  REQUIRE(got.size() == 3); // the routing id the ROUTER gave us, then our two frames
  CHECK(text(got[1]) == head);
  CHECK(text(got[2]) == payload);
  std::string id = text(got[0]);

  // Replies: a 100 KiB payload its header announces, then a header alone.
  std::string big(100 << 10, '\0');
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>(i * 7);
  router.send(zmq::buffer(id), zmq::send_flags::sndmore);
  router.send(zmq::buffer(sizeHeader(big.size())), zmq::send_flags::sndmore);
  router.send(zmq::buffer(big), zmq::send_flags::none);
  router.send(zmq::buffer(id), zmq::send_flags::sndmore);
  router.send(zmq::str_buffer("ok"), zmq::send_flags::none);

  auto first = requireValue(link->receive(milliseconds(2000)));
  REQUIRE(first);
  REQUIRE(first->size() == 2);
  CHECK(text((*first)[1]) == big);
  auto second = requireValue(link->receive(milliseconds(2000)));
  REQUIRE(second);
  REQUIRE(second->size() == 1);
  CHECK(text((*second)[0]) == "ok");

  // Nothing more comes: a wait ends at its timeout.
  auto start = std::chrono::steady_clock::now();
  auto none = requireValue(link->receive(milliseconds(50)));
  CHECK(!none);
  // A wait that ignored its timeout would block until the test's own; 100x its timeout is
  // margin enough for a loaded 2-core machine.
  CHECK(std::chrono::steady_clock::now() - start < milliseconds(5000));
  CHECK(!requireValue(link->receive(milliseconds(0))));

  // A payload larger than its header announces is refused before it is allocated.
  router.send(zmq::buffer(id), zmq::send_flags::sndmore);
  router.send(zmq::buffer(sizeHeader(70000)), zmq::send_flags::sndmore);
  router.send(zmq::buffer(std::string(80000, 'x')), zmq::send_flags::none);
  CHECK_THAT(errorText(link->receive(milliseconds(2000))),
             Contains("announced a frame of 80000 bytes where at most 70000 belong"));
  CHECK(link->broken());
}

TEST_CASE("a link reports a pserver that is not there, or that leaves", "[runtime][zmtp]") {
  std::string address = "ipc://@oar-zmtp-test-nobody-" + std::to_string(getpid());
  CHECK_THAT(errorText(ZmtpLink::connect(address, milliseconds(500), {})),
             Contains(address + ": cannot connect: Connection refused"));
  CHECK_THAT(errorText(ZmtpLink::connect("tcp://127.0.0.1:1", milliseconds(500), {})),
             Contains("not an ipc:// address of a Unix socket"));

  ScriptedPeer peer;
  peer.write(greeting() + ready("ROUTER"));
  auto link = requireValue(peer.greet());
  peer.write(frame("queued"));
  CHECK_FALSE(link->peerHungUp());
  close(peer.fds[0]);
  peer.fds[0] = -1;
  CHECK(link->peerHungUp()); // told without reading what came before
  auto queued = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(queued);
  CHECK(text((*queued)[0]) == "queued");
  CHECK_THAT(errorText(link->receive(milliseconds(1000))), Contains("closed the connection"));
  CHECK(link->peerClosed());
  CHECK_THAT(errorText(link->send({}, milliseconds(100))), Contains("broken"));
}

TEST_CASE("a link keeps a message that arrives in pieces", "[runtime][zmtp]") {
  ScriptedPeer peer;
  peer.write(greeting() + ready("ROUTER"));
  auto link = requireValue(peer.greet(announcedBySize));
  std::string payload(20000, 'q');
  std::string wire = frame(sizeHeader(payload.size()), 1) + frame(payload);
  peer.write(wire.substr(0, 5000));
  CHECK(!requireValue(link->receive(milliseconds(20)))); // half a message: not yet
  peer.write(wire.substr(5000));
  auto got = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(got);
  REQUIRE(got->size() == 2);
  CHECK(text((*got)[1]) == payload);
}

TEST_CASE("a link refuses peers that are not a pserver's ROUTER, and broken frames",
          "[runtime][zmtp]") {
  auto refusal = [](const std::string &bytes, ZmtpLink::PayloadLimit limit = {}) {
    ScriptedPeer peer;
    peer.write(bytes);
    auto link = peer.greet(std::move(limit));
    if (!link)
      return errorText(link.takeError());
    return errorText((*link)->receive(milliseconds(1000)));
  };
  CHECK_THAT(refusal(std::string(64, 'x')), Contains("does not speak ZeroMQ's ZMTP 3"));
  CHECK_THAT(refusal(greeting("CURVE")), Contains("asks for the CURVE mechanism"));
  CHECK_THAT(refusal(greeting() + ready("DEALER")), Contains("is a DEALER, not a pserver's"));
  CHECK_THAT(refusal(greeting() + frame("\x05"
                                        "ERROR"
                                        "\x06"
                                        "denied",
                                        4)),
             Contains("refused the connection: denied"));
  std::string ok = greeting() + ready("ROUTER");
  CHECK_THAT(refusal(ok + frame("a", 1) + frame("b", 1) + frame("c")),
             Contains("more than two frames"));
  CHECK_THAT(refusal(ok + std::string("\x02\x10\0\0\0\0\0\0\0", 9)),
             Contains("announced a frame of 1152921504606846976 bytes"));
  CHECK_THAT(refusal(ok + frame("h", 1) + frame(std::string(70000, 'x')), announcedBySize),
             Contains("where at most 0 belong")); // a header that announces no payload
  CHECK_THAT(refusal(ok + std::string("\x40\x01x", 3)), Contains("unknown flags 64"));
  CHECK_THAT(refusal(ok + frame("\x04"
                                "WHAT",
                                4)),
             Contains("unknown command 'WHAT'"));
}

TEST_CASE("a link answers a PING with a PONG of its context", "[runtime][zmtp]") {
  ScriptedPeer peer;
  peer.write(greeting() + ready("ROUTER"));
  auto link = requireValue(peer.greet());
  // What the link sent: its greeting (64 bytes) and READY (a 2-byte head, 41 bytes of body).
  std::string sent(64 + 2 + 41, '\0');
  REQUIRE(read(peer.fds[0], sent.data(), sent.size()) == static_cast<ssize_t>(sent.size()));
  peer.write(frame(std::string("\x04PING\0\x0a", 7) + "ctx", 4) + frame("after"));
  auto got = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(got);
  CHECK(text((*got)[0]) == "after");
  char pong[32] = {};
  ssize_t n = read(peer.fds[0], pong, sizeof(pong));
  CHECK(std::string(pong, n > 0 ? n : 0) == frame("\x04PONGctx", 4));
}

namespace {

/// A stand-in pserver at `endpoint`'s local IPC name, on a thread: it answers HELLOs and nothing
/// else until close().
class SilentPserver {
public:
  explicit SilentPserver(const std::string &endpoint) {
    socket_.bind(*localIpcAddress(endpoint));
    thread_ = std::thread([this] {
      socket_.set(zmq::sockopt::rcvtimeo, 20);
      while (!closing_) {
        std::vector<zmq::message_t> frames;
        if (!zmq::recv_multipart(socket_, std::back_inserter(frames)) || frames.size() < 2)
          continue;
        proto::MsgHeader h;
        if (!h.ParseFromArray(frames[1].data(), static_cast<int>(frames[1].size())) ||
            h.kind() != proto::HELLO)
          continue;
        std::string reply = makeHeader(proto::REPLY_OK, "", h.trainer_id(), 0).SerializeAsString();
        socket_.send(frames[0], zmq::send_flags::sndmore);
        socket_.send(zmq::buffer(reply), zmq::send_flags::none);
      }
      socket_.close();
    });
  }
  ~SilentPserver() { close(); }
  /// Closes its socket (its connections with it).
  void close() {
    closing_ = true;
    if (thread_.joinable())
      thread_.join();
  }

private:
  zmq::context_t context_;
  zmq::socket_t socket_{context_, zmq::socket_type::router};
  std::atomic<bool> closing_{false};
  std::thread thread_;
};

} // namespace

TEST_CASE("a trainer waiting on one pserver notices at once that another one's link closed",
          "[runtime][zmtp]") {
  auto waitedOnPort = holdPort(), leavingPort = holdPort(); // their IPC names are ours meanwhile
  std::string waitedOn = endpointOf(*waitedOnPort);
  std::string leaving = endpointOf(*leavingPort);
  SilentPserver quiet(waitedOn), gone(leaving);
  Timeouts timeouts;
  timeouts.connect = timeouts.reply = timeouts.barrier = milliseconds(10000);
  Communicator trainer(0, {waitedOn, leaving}, timeouts);
  REQUIRE_OK(trainer.connect({Mode::Sync, 1, "digest"}));
  CHECK(trainer.linkedPservers() == 2);
  gone.close();
  auto start = std::chrono::steady_clock::now();
  Tensor w;
  CHECK_THAT(errorText(trainer.getVars({"w"}, {waitedOn}, {&w})),
             Contains("trainer 0: lost the connection to pserver " + leaving +
                      " while receiving w (waiting on " + waitedOn + ")"));
  // Told at once, not after the reply timeout (10 s): half of it is the margin.
  CHECK(std::chrono::steady_clock::now() - start < timeouts.reply / 2);
  CHECK(trainer.needsRecovery() == false); // these pservers keep no checkpoints
}

TEST_CASE("a link reads a frame head across its buffer's end, and empty frames",
          "[runtime][zmtp]") {
  // The greeting (64 bytes) and READY (30) come first; a 9-byte frame head then starts 4 bytes
  // before the link's 8 KiB buffer ends.
  ScriptedPeer peer;
  std::string first(8192 - 4 - 94 - 9, 'a'), second(300, 'b');
  peer.write(greeting() + ready("ROUTER") + frame(first) + frame(second) + frame("", 1) +
             frame(""));
  auto link = requireValue(peer.greet());
  auto a = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(a);
  CHECK(text((*a)[0]) == first);
  auto b = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(b);
  CHECK(text((*b)[0]) == second);
  auto empty = requireValue(link->receive(milliseconds(1000)));
  REQUIRE(empty);
  REQUIRE(empty->size() == 2);
  CHECK((*empty)[0].size() == 0);
  CHECK((*empty)[1].size() == 0);
}

TEST_CASE("a link writes a large message to a peer that reads slowly, all of it in order",
          "[runtime][zmtp]") {
  ScriptedPeer peer;
  peer.write(greeting() + ready("ROUTER"));
  auto link = requireValue(peer.greet());
  std::string payload(4 << 20, '\0');
  for (size_t i = 0; i < payload.size(); ++i)
    payload[i] = static_cast<char>(i * 131 + i / 4096);
  std::string received;
  std::thread reader([&] { // takes 64 KiB at a time, pausing: sendmsg writes in parts
    char chunk[64 << 10];
    for (ssize_t n; (n = read(peer.fds[0], chunk, sizeof(chunk))) > 0;) {
      received.append(chunk, n);
      if (received.size() >= 107 + 9 + payload.size())
        break;
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  });
  REQUIRE_OK(link->send(
      {llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(payload.data()), payload.size())},
      milliseconds(10000)));
  reader.join();
  // What the link sent: its greeting and READY (107 bytes), then the frame.
  CHECK(received.substr(107) == frame(payload));
}

TEST_CASE("a link's receive ends at its timeout however the peer trickles its bytes",
          "[runtime][zmtp]") {
  ScriptedPeer peer;
  peer.write(greeting() + ready("ROUTER"));
  auto link = requireValue(peer.greet());
  std::string wire = frame(std::string(100, 'x')); // a trickle of over 3 s
  std::atomic<bool> stop{false};
  std::thread trickle([&] { // a byte every 30 ms: each read gets something, none completes
    for (size_t i = 0; i < wire.size() && !stop; ++i) {
      peer.write(wire.substr(i, 1));
      std::this_thread::sleep_for(milliseconds(30));
    }
  });
  auto start = std::chrono::steady_clock::now();
  auto got = requireValue(link->receive(milliseconds(200)));
  auto took = std::chrono::steady_clock::now() - start;
  stop = true;
  trickle.join();
  CHECK(!got);
  // At most its timeout and one more read's wait; a wait that each byte restarted would last
  // the whole trickle (over 3 s). 10x the timeout is the margin on a loaded machine.
  CHECK(took < milliseconds(2000));
}

TEST_CASE("a link takes memory for a huge announced frame only as its bytes arrive",
          "[runtime][zmtp]") {
  // 2^40 bytes announced (and allowed by the header), 1000 sent, then the peer leaves: the
  // link must fail on the close, not on allocating a terabyte first.
  ScriptedPeer peer;
  std::string header = sizeHeader(uint64_t(1) << 40);
  std::string head("\x02\x00\x00\x01\x00\x00\x00\x00\x00", 9);
  peer.write(greeting() + ready("ROUTER") + frame(header, 1) + head + std::string(1000, 'z'));
  auto link = requireValue(peer.greet(announcedBySize));
  ::close(peer.fds[0]);
  peer.fds[0] = -1;
  CHECK_THAT(errorText(link->receive(milliseconds(1000))), Contains("closed the connection"));
}

TEST_CASE("an ERROR without a reason is refused, not a crash", "[runtime][zmtp]") {
  ScriptedPeer peer;
  peer.write(greeting() + frame(std::string("\x05"
                                            "ERROR",
                                            6),
                                4));
  CHECK_THAT(errorText(peer.greet()), Contains("refused the connection: "));
}
