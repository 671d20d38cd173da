// A live pserver in a thread on 127.0.0.1, and raw clients to probe it: shared by the runtime
// tests.
#pragma once

#include <future>
#include <mutex>

#include "api/recipes.h"
#include "runtime/cluster/launcher.h"
#include "runtime/node/node.h"
#include "runtime/trainer/communicator.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "transpiler/transpiler.h"

namespace oar::test {
using namespace oar::runtime;

inline Timeouts shortTimeouts() {
  Timeouts t;
  t.connect = std::chrono::milliseconds(3000);
  t.reply = std::chrono::milliseconds(3000);
  t.barrier = std::chrono::milliseconds(3000);
  t.idle = std::chrono::milliseconds(10000);
  return t;
}

/// Runs a pserver in a thread; the future holds its result text ("" for success).
inline std::future<std::string> servePserver(NodePrograms progs, Node opts) {
  return std::async(std::launch::async, [progs = std::move(progs), opts = std::move(opts)] {
    llvm::Error err = runPserver(progs, opts);
    return err ? llvm::toString(std::move(err)) : std::string();
  });
}

/// The lines a pserver logs, collected from its thread.
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(const std::string &)> sink() {
    return [this](const std::string &line) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(line);
    };
  }
};

/// fit_a_line transpiled for one pserver on a free port and two sync trainers.
struct OnePserverJob {
  TranspileResult r;
  std::string endpoint, mode;
  /// The endpoint's port, held until the first serve() takes it over (a restart binds it).
  std::shared_ptr<HeldPort> port = holdPort();
  Timeouts timeouts = shortTimeouts();
  explicit OnePserverJob(std::string jobMode = "sync") : mode(std::move(jobMode)) {
    ModelBuilder m = requireValue(buildRecipe(RecipeSpec{}));
    DistributeConfig c;
    c.mode = llvm::cantFail(parseMode(mode));
    c.trainers = 2;
    endpoint = endpointOf(*port);
    c.pservers = {endpoint};
    r = requireValue(transpile(m.main(), m.startup(), c));
  }
  /// The pserver's options: its held port and the job's short timeouts.
  Node options() const {
    Node opts;
    opts.heldPort = port;
    opts.options.timeouts = timeouts;
    return opts;
  }
  /// Serves in a thread; the future holds the pserver's result text ("" for success).
  std::future<std::string> serve(std::string jobId = "", LogLines *log = nullptr,
                                 CurveConfig curve = {}) {
    Node opts = options();
    opts.cluster.jobId = std::move(jobId);
    opts.curve = std::move(curve);
    if (log)
      opts.log = log->sink();
    return servePserver({r.pserver(0), r.pserverStartup(0)}, std::move(opts));
  }
  JobIdentity job() const {
    return {llvm::cantFail(parseMode(mode)), 2, r.trainer().dist().plan_digest()};
  }
  /// Both trainers connect as `identity` and complete; the pserver must then end successfully.
  void finishCleanly(std::future<std::string> &server, const JobIdentity &identity) {
    Communicator t0(0, {endpoint}, shortTimeouts()), t1(1, {endpoint}, shortTimeouts());
    REQUIRE_OK(t0.connect(identity));
    REQUIRE_OK(t1.connect(identity));
    REQUIRE_OK(t0.complete());
    REQUIRE_OK(t1.complete());
    CHECK(server.get() == "");
  }
};

/// A bare DEALER connected to a pserver as a trainer of this host is (its local socket: a keyless
/// pserver on loopback takes no TCP peer), for messages no Communicator would send.
inline zmq::socket_t rawClient(zmq::context_t &ctx, const std::string &endpoint) {
  zmq::socket_t raw(ctx, zmq::socket_type::dealer);
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(connectAddress(endpoint));
  return raw;
}

/// Sends raw frames and returns the reply header.
inline proto::MsgHeader rawRequest(zmq::socket_t &s, std::vector<std::string> frames) {
  for (size_t i = 0; i < frames.size(); ++i)
    s.send(zmq::message_t(frames[i].data(), frames[i].size()),
           i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  auto reply = receiveFrames(s, std::chrono::milliseconds(3000));
  REQUIRE(reply);
  auto msg = requireValue(decodeMessage(*reply, 0));
  return msg.header;
}

inline std::string header(proto::MsgKind kind, const std::string &var, int64_t trainer,
                          std::vector<int64_t> dims = {}) {
  proto::MsgHeader h = makeHeader(kind, var, trainer, 0);
  if (!dims.empty()) {
    h.set_dtype(proto::F32);
    for (int64_t d : dims)
      h.add_dims(d);
  }
  return h.SerializeAsString();
}

/// A HELLO of trainer 0 of `job`.
inline std::string hello(const OnePserverJob &job) {
  proto::MsgHeader h = makeHeader(proto::HELLO, "", 0, 0);
  h.set_mode(job.mode);
  h.set_trainers(2);
  h.set_plan_digest(job.r.trainer().dist().plan_digest());
  return h.SerializeAsString();
}

} // namespace oar::test
