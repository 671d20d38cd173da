// Channels: the DEALER and the direct link carry the same messages to a pserver's ROUTER, and
// tell the same news of it; refusals and full queues are reported, never waited on forever.
#include <unistd.h>

#include <chrono>
#include <thread>

#include "runtime/transport/channel.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "test/helpers/skip.h"
#include "zmq_addon.hpp"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;
using std::chrono::milliseconds;

namespace {

/// A libzmq ROUTER where a pserver of this host listens for its trainers (its IPC name).
struct RouterAt {
  std::shared_ptr<HeldPort> port = holdPort(); // keeps the name ours for the test
  std::string endpoint = endpointOf(*port);
  zmq::context_t context;
  zmq::socket_t router{context, zmq::socket_type::router};
  explicit RouterAt(bool curveServer = false) {
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::rcvtimeo, 5000);
    if (curveServer) {
      CurveKeyPair keys = requireValue(newCurveKeyPair());
      router.set(zmq::sockopt::curve_server, 1);
      router.set(zmq::sockopt::curve_secretkey, keys.secretKey);
    }
    router.bind(*localIpcAddress(endpoint));
  }
};

std::unique_ptr<Channel> open(ClientContext &context, const RouterAt &server, bool direct) {
  if (direct)
    return requireValue(openLink(*localIpcAddress(server.endpoint), milliseconds(2000)));
  return requireValue(openDealer(context, server.endpoint, DealerOptions{{}, {}, {}, true}));
}

} // namespace

TEST_CASE("a DEALER and a direct link carry a header and its tensor both ways",
          "[runtime][channel]") {
  bool direct = GENERATE(false, true);
  CAPTURE(direct);
  RouterAt server;
  ClientContext context;
  std::unique_ptr<Channel> channel = open(context, server, direct);
  CHECK(channel->direct() == direct);
  CHECK(channel->peerPid() == (direct ? getpid() : 0)); // the kernel names a link's peer

  Tensor grad = Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE_OK(channel->send(encodeMessage(makeHeader(proto::SEND_VAR, "w@GRAD", 0, 7), &grad),
                           milliseconds(2000)));
  std::vector<zmq::message_t> got;
  REQUIRE(zmq::recv_multipart(server.router, std::back_inserter(got)));
  Message sent = requireValue(decodeMessage(got, 1)); // after the routing id
  CHECK(sent.header.var() == "w@GRAD");
  CHECK(sent.header.step() == 7);
  Tensor arrived;
  sent.moveInto(arrived);
  CHECK(arrived.toVector<float>() == grad.toVector<float>());

  Tensor param = Tensor::fromVector<float>({3}, {0.5f, -1, 8});
  server.router.send(got[0], zmq::send_flags::sndmore);
  sendMessage(server.router, makeHeader(proto::REPLY_VAR, "w", 0, 7), &param);
  auto reply = requireValue(channel->receive(milliseconds(5000)));
  REQUIRE(reply);
  Message answer = requireValue(decodeMessage(*reply, 0));
  Tensor fetched;
  answer.moveInto(fetched);
  CHECK(fetched.toVector<float>() == param.toVector<float>());
  CHECK(!requireValue(channel->receive(milliseconds(0)))); // nothing else came
  CHECK_FALSE(channel->news().dropped);

  // The pserver goes away: the channel says so within seconds.
  server.router.close();
  bool dropped = false;
  for (int i = 0; i < 200 && !dropped; ++i) {
    dropped = channel->news().dropped;
    if (!dropped)
      std::this_thread::sleep_for(milliseconds(25));
  }
  CHECK(dropped);
  if (direct) { // a read finds it gone, and says so from then on
    CHECK_THAT(errorText(channel->receive(milliseconds(100))), Contains("closed"));
    CHECK(channel->peerClosed());
  }
}

TEST_CASE("a direct link to a CURVE pserver is refused, saying which keys to give",
          "[runtime][channel]") {
  if (!curveAvailable())
    OAR_SKIP("this libzmq has no CURVE (libsodium)");
  RouterAt server(/*curveServer=*/true);
  auto channel = openLink(*localIpcAddress(server.endpoint), milliseconds(2000));
  REQUIRE(!channel);
  bool refused = false;
  std::string message;
  llvm::handleAllErrors(
      channel.takeError(),
      [&](const ChannelRefused &r) {
        refused = true;
        message = r.message();
      },
      [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  CHECK(refused);
  CHECK_THAT(message, Contains("--curve-secret"));
}

TEST_CASE("a DEALER whose queue stays full gives up at its timeout, or at once with none",
          "[runtime][channel]") {
  std::shared_ptr<HeldPort> port = holdPort(); // a name nobody serves: nothing is ever taken
  ClientContext context;
  auto channel = requireValue(openDealer(context, endpointOf(*port), {}));
  llvm::Error full = llvm::Error::success();
  int queued = 0;
  for (; queued < 100000; ++queued) { // libzmq queues up to its high-water mark (1000)
    auto m = encodeMessage(makeHeader(proto::SEND_BARRIER, "", 0, queued), nullptr);
    if ((full = channel->send(std::move(m), milliseconds(0))))
      break;
  }
  CHECK(queued >= 1000);
  CHECK(queued < 100000);
  CHECK_THAT(llvm::toString(std::move(full)), Contains("cannot send"));
  CHECK_THAT(errorText(channel->send(encodeMessage(makeHeader(proto::HELLO, "", 0, 0), nullptr),
                                     milliseconds(300))),
             Contains("cannot send"));
}
