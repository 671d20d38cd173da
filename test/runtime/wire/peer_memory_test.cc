// Peer memory: which process a message came from, the probe, and payloads read from another
// process (a forked child, which holds the parent's memory as it was at the fork).
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <numeric>

#include "ir/names.h"
#include "runtime/pserver/gradient_landings.h"
#include "runtime/pserver/pserver_peer_memory.h"
#include "runtime/wire/peer_memory.h"
#include "runtime/wire/protocol.h"
#include "test/helpers/expect.h"
#include "test/helpers/ptrace_rules.h"
#include "test/helpers/skip.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;
using oar::test::mayReadChildren;

namespace {

/// A child process that holds this process's memory as it was at the fork, until destroyed.
class ForkedTwin {
public:
  ForkedTwin() {
    REQUIRE(pipe(release_) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) { // the child waits until the parent closes the pipe, touching nothing
      close(release_[1]);
      char c;
      while (read(release_[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    close(release_[0]);
  }
  ~ForkedTwin() { end(); }
  void end() {
    if (pid_ <= 0)
      return;
    if (release_[1] >= 0)
      close(release_[1]);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = 0;
  }
  pid_t pid() const { return pid_; }
  /// Lets the child exit and waits until it has, leaving it unreaped (a zombie keeps its pid
  /// but has no memory left), as a pserver killed while a trainer reads it.
  void exitUnreaped() {
    close(release_[1]);
    release_[1] = -1;
    siginfo_t info{};
    REQUIRE(waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOWAIT) == 0);
  }

private:
  int release_[2] = {-1, -1};
  pid_t pid_ = 0;
};

/// A message whose f32 payload of `n` elements lies at `at` in its sender's memory.
Message messageAt(const void *at, int64_t n, pid_t sender) {
  proto::MsgHeader h = makeHeader(proto::SEND_VAR, "w@GRAD", 0, 0);
  h.set_dtype(proto::F32);
  h.add_dims(n);
  h.set_peer_address(reinterpret_cast<uint64_t>(at));
  std::string head = h.SerializeAsString();
  std::vector<zmq::message_t> frames; // the header alone, as sendMessage sends it
  frames.emplace_back(head.data(), head.size());
  Message m = requireValue(decodeMessage(frames, 0));
  m.senderPid = sender;
  return m;
}

} // namespace

TEST_CASE("the kernel names a local peer's process: a TCP peer has none", "[runtime]") {
  zmq::context_t ctx;
  zmq::socket_t server(ctx, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  server.bind("ipc://@oar-peer-memory-test-" + std::to_string(getpid()));
  server.bind("tcp://127.0.0.1:*");
  std::string tcp = server.get(zmq::sockopt::last_endpoint);
  for (bool overIpc : {true, false}) {
    zmq::socket_t client(ctx, zmq::socket_type::dealer);
    client.set(zmq::sockopt::linger, 0);
    client.connect(overIpc ? "ipc://@oar-peer-memory-test-" + std::to_string(getpid()) : tcp);
    client.send(zmq::str_buffer("hi"));
    auto frames = receiveFrames(server, std::chrono::milliseconds(3000));
    REQUIRE(frames);
    INFO("over IPC: " << overIpc);
    CHECK(localSenderPid(frames->parts().back()) == (overIpc ? getpid() : 0));
  }
}

TEST_CASE("a probe verifies the process that holds it, never this one", "[runtime]") {
  proto::MsgHeader h;
  offerPeerMemory(h);
  REQUIRE(h.probe().size() == 16);
  if (!mayReadChildren())
    OAR_SKIP("this host lets no process read a child's memory (Yama, seccomp)");
  ForkedTwin twin; // it holds the same probe at the same address
  CHECK(verifiedPeerPid(h, twin.pid()) == twin.pid());
  // A peer that read our probe in our reply cannot make us read our own memory.
  CHECK(verifiedPeerPid(h, getpid()) == 0);
  proto::MsgHeader forged = h;
  forged.mutable_probe()->at(3) ^= 1;
  CHECK(verifiedPeerPid(forged, twin.pid()) == 0);
  setenv("OAR_PEER_MEMORY", "0", 1);
  CHECK(verifiedPeerPid(h, twin.pid()) == 0);
  unsetenv("OAR_PEER_MEMORY");
  pid_t gone = twin.pid();
  twin.end();
  CHECK(verifiedPeerPid(h, gone) == 0);
}

TEST_CASE("a payload in peer memory is read from the sender's process, not from ours",
          "[runtime]") {
  std::vector<float> values(1 << 15);
  std::iota(values.begin(), values.end(), 0.5f);
  if (!mayReadChildren())
    OAR_SKIP("this host lets no process read a child's memory (Yama, seccomp)");
  ForkedTwin twin;
  std::vector<float> atFork = values;
  for (float &v : values) // ours changes; the twin's stays as it was
    v = -v;

  Message m = messageAt(values.data(), static_cast<int64_t>(values.size()), twin.pid());
  CHECK(m.peerBytes == values.size() * sizeof(float));
  REQUIRE_OK(readPeerPayload(m, twin.pid(), "trainer 0"));
  Tensor t;
  m.moveInto(t);
  CHECK(t.toVector<float>() == atFork);

  // Only from the process that said HELLO, only where it has memory, only after a probe.
  Message other = messageAt(values.data(), 4, getpid());
  CHECK_THAT(errorText(readPeerPayload(other, twin.pid(), "trainer 0")),
             Contains("trainer 0: w@GRAD's payload lies in the memory of a process other than "
                      "the one that said HELLO"));
  Message unmapped = messageAt(reinterpret_cast<void *>(4096), 4, twin.pid());
  CHECK_THAT(errorText(readPeerPayload(unmapped, twin.pid(), "trainer 0")),
             Contains("trainer 0: cannot read w@GRAD's 16 bytes from its memory (process " +
                      std::to_string(twin.pid()) + ")"));
  Message unverified = messageAt(values.data(), 4, twin.pid());
  CHECK_THAT(errorText(readPeerPayload(unverified, 0, "trainer 0")),
             Contains("offered no probe that reads back"));
}

TEST_CASE("reading the memory of a process that ended says the peer is gone, so that it counts "
          "as lost",
          "[runtime]") {
  std::vector<float> values(1 << 16, 1.5f);
  if (!mayReadChildren())
    OAR_SKIP("this host lets no process read a child's memory (Yama, seccomp)");
  ForkedTwin twin;
  twin.exitUnreaped();
  Message m = messageAt(values.data(), static_cast<int64_t>(values.size()), twin.pid());
  llvm::Error err = readPeerPayload(m, twin.pid(), "pserver 127.0.0.1:1");
  REQUIRE(err.isA<PeerProcessGone>());
  CHECK_THAT(llvm::toString(std::move(err)),
             Contains("pserver 127.0.0.1:1: its process " + std::to_string(twin.pid()) +
                      " ended while w@GRAD's 262144 bytes were read from its memory"));
}

TEST_CASE("a fetched param in peer memory is read into its old buffer when that has its size",
          "[runtime]") {
  // Its old value's pages are mapped already: a fresh buffer of a large param took a page fault
  // per page on the trainer's critical path.
  if (!mayReadChildren())
    OAR_SKIP("this host lets no process read a child's memory (Yama, seccomp)");
  std::vector<float> values(1 << 16);
  std::iota(values.begin(), values.end(), 1.0f);
  ForkedTwin twin;
  // As getVars does, round after round: the old value's buffer is handed over, the tensor let
  // go, the reply read and moved in. The buffer and its owner stay the same (a first version
  // wrapped the old owner in a new one every round: a chain that grew by one link a step).
  Tensor param(proto::F32, {static_cast<int64_t>(values.size())});
  std::weak_ptr<std::byte> first = param.buffer();
  const std::byte *firstBytes = param.buffer().get();
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    Tensor into = std::move(param);
    param = Tensor();
    Message m = messageAt(values.data(), static_cast<int64_t>(values.size()), twin.pid());
    REQUIRE_OK(readPeerPayload(m, twin.pid(), "pserver 0", std::move(into)));
    m.moveInto(param);
    CHECK(static_cast<const void *>(param.raw()) == static_cast<const void *>(firstBytes));
    std::shared_ptr<std::byte> now = param.buffer();
    CHECK((!first.owner_before(now) && !now.owner_before(first))); // the same owner
    CHECK(now.use_count() == 2);                                   // the tensor's and `now`
    CHECK(param.toVector<float>() == values);
  }

  // A buffer of another size is left alone: the bytes go to a fresh one.
  Tensor small(proto::F32, {4});
  std::vector<float> smallBefore = small.toVector<float>();
  Message again = messageAt(values.data(), static_cast<int64_t>(values.size()), twin.pid());
  REQUIRE_OK(readPeerPayload(again, twin.pid(), "pserver 0", small));
  Tensor elsewhere;
  again.moveInto(elsewhere);
  CHECK(static_cast<const void *>(elsewhere.raw()) != static_cast<const void *>(small.raw()));
  CHECK(elsewhere.toVector<float>() == values);
  CHECK(small.toVector<float>() == smallBefore);
}

TEST_CASE("a payload said to lie in the sender's memory comes without bytes of its own",
          "[runtime][errors]") {
  proto::MsgHeader h = makeHeader(proto::SEND_VAR, "w@GRAD", 0, 0);
  h.set_dtype(proto::F32);
  h.add_dims(2);
  h.set_peer_address(4096);
  std::string head = h.SerializeAsString();
  std::vector<zmq::message_t> frames;
  frames.emplace_back(head.data(), head.size());
  frames.emplace_back(8);
  CHECK_THAT(errorText(decodeMessage(frames, 0)),
             Contains("w@GRAD: a payload in the sender's memory, or written to the "
                      "receiver's already, comes without bytes of its own"));
}

TEST_CASE("a trainer that left keeps writing into a landing nobody reads any more", "[runtime]") {
  Scope scope;
  llvm::StringMap<ops::VarType> grads;
  grads["w@GRAD"] = ops::VarType{proto::F32, {256, 64}};
  grads["b@GRAD"] = ops::VarType{proto::F32, {64}}; // too small: through the socket
  GradientLandings landings;
  proto::MsgHeader hello;
  landings.offer(scope, /*sync=*/true, 1, grads, hello);
  REQUIRE(hello.landing_vars_size() == 1);
  CHECK(hello.landing_vars(0) == "w@GRAD");
  CHECK(hello.landing_bytes(0) == 256 * 64 * 4);
  Tensor &copy = scope.get(trainerCopyName("w@GRAD", 1));
  auto *landing = reinterpret_cast<float *>(hello.landing_addresses(0));
  CHECK(landing == copy.data<float>());
  CHECK(landings.has(1, "w@GRAD"));
  CHECK_FALSE(landings.has(0, "w@GRAD"));
  proto::MsgHeader again; // a second HELLO gets the same place
  landings.offer(scope, /*sync=*/true, 1, grads, again);
  CHECK(again.landing_addresses(0) == hello.landing_addresses(0));

  landings.retire(scope, /*sync=*/true, 1);
  CHECK_FALSE(landings.has(1, "w@GRAD"));
  Tensor &after = scope.get(trainerCopyName("w@GRAD", 1));
  CHECK(after.data<float>() != landing);
  landing[7] = 3.5f; // a stray write of the trainer that left: still its memory, and unread
  CHECK(after.toVector<float>() == std::vector<float>(256 * 64, 0.0f));
}

TEST_CASE("a pserver keeps what a trainer reads of its memory until that trainer's next fetch "
          "round",
          "[runtime]") {
  // Async trainers never advance their step: rounds, not steps, let go (every snapshot of an
  // async run stayed alive when steps did).
  PserverPeerMemory peerMemory;
  peerMemory.resize(2);
  auto fetch = [](uint64_t round) {
    proto::MsgHeader request = makeHeader(proto::GET_VAR, "w", 1, 0);
    request.set_accepts_peer_memory(true);
    request.set_fetch_round(round);
    return request;
  };
  auto serve = [&](const proto::MsgHeader &request, const Tensor &value) {
    proto::MsgHeader reply = makeHeader(proto::REPLY_VAR, "w", 1, 0);
    peerMemory.serve(request, reply, value);
    return reply.peer_address();
  };
  Tensor a(proto::F32, {256, 256}), b(proto::F32, {256, 256}), c(proto::F32, {256, 256});
  std::weak_ptr<std::byte> aHeld = a.buffer(), bHeld = b.buffer();
  CHECK(serve(fetch(1), a) == reinterpret_cast<uint64_t>(a.raw()));
  CHECK(serve(fetch(1), b) != 0); // the same var twice in one round: both stay
  a = Tensor();
  b = Tensor();
  CHECK(!aHeld.expired());
  CHECK(!bHeld.expired());
  serve(fetch(2), c); // the trainer read round 1's replies before it sent this
  CHECK(aHeld.expired());
  CHECK(bHeld.expired());
  proto::MsgHeader elsewhere = fetch(3); // a request that does not accept gets the socket
  elsewhere.set_accepts_peer_memory(false);
  CHECK(serve(elsewhere, c) == 0);
  // A param below kPeerParamMinBytes is cheaper to pull through the socket, gradients that
  // size still land (kPeerMemoryMinBytes).
  Tensor medium(proto::F32, {256, 64});
  CHECK(worthPeerMemory(&medium));
  CHECK(serve(fetch(4), medium) == 0);
}

TEST_CASE("a peer-memory field on the wrong kind of message is refused, and no tensor is made "
          "for bytes that are not here",
          "[runtime][errors]") {
  // Found by fuzz/message_fuzz.cc: a reply marked `landed` with huge dims decoded, and making
  // its tensor allocated dims x dtype bytes (a hostile pserver could end a trainer so).
  auto decode = [](const proto::MsgHeader &h) {
    std::string head = h.SerializeAsString();
    std::vector<zmq::message_t> frames;
    frames.emplace_back(head.data(), head.size());
    frames.emplace_back();
    return decodeMessage(frames, 0);
  };
  proto::MsgHeader reply = makeHeader(proto::REPLY_VAR, "w", 0, 0);
  reply.set_dtype(proto::F32);
  reply.add_dims(int64_t(1) << 40);
  reply.set_landed(true);
  CHECK_THAT(errorText(decode(reply)),
             Contains("w: only a send_var is written into the receiver's memory"));
  proto::MsgHeader barrier = makeHeader(proto::SEND_BARRIER, "w", 0, 0);
  barrier.set_dtype(proto::F32);
  barrier.add_dims(4);
  barrier.set_peer_address(4096);
  CHECK_THAT(errorText(decode(barrier)),
             Contains("only a send_var or a reply_var leaves its payload in the sender's memory"));
  proto::MsgHeader landed = makeHeader(proto::SEND_VAR, "w@GRAD", 0, 0);
  landed.set_dtype(proto::F32);
  landed.add_dims(int64_t(1) << 40);
  landed.set_landed(true);
  Message m = requireValue(decode(landed));
  Tensor t;
  m.moveInto(t); // no 4 TiB allocation
  CHECK_FALSE(t.initialized());
}
