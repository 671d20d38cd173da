// A live pserver (in a thread, on 127.0.0.1) against bad messages and mismatched trainers.
#include <cmath>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "api/recipes.h"
#include "executor/executor.h"
#include "executor/npy.h"
#include "runtime/cluster/launcher.h"
#include "runtime/node/node.h"
#include "runtime/trainer/communicator.h"
#include "runtime/wire/peer_memory.h"
#include "support/log_limiter.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "test/runtime/pserver_job.h"
#include "transpiler/transpiler.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;

using namespace oar::test;

TEST_CASE("a message whose dims multiply past 64 bits is refused before any tensor is made",
          "[runtime][errors]") {
  // Found by fuzz/message_fuzz.cc: 2^32 x 2^32 f32 wrapped to 0 bytes, so an empty payload
  // "matched" and a peer could hand over a tensor of 2^64 elements.
  std::string head = header(proto::REPLY_VAR, "w", 0, {int64_t(1) << 32, int64_t(1) << 32});
  std::vector<zmq::message_t> frames;
  frames.emplace_back(head.data(), head.size());
  frames.emplace_back();
  CHECK_THAT(errorText(decodeMessage(frames, 0)),
             Contains("w: dims [4294967296,4294967296] hold too many elements"));
}

TEST_CASE("a message without bytes to carry is its header alone", "[runtime]") {
  zmq::context_t ctx;
  zmq::socket_t out(ctx, zmq::socket_type::pair), in(ctx, zmq::socket_type::pair);
  out.bind("inproc://header-alone");
  in.connect("inproc://header-alone");
  auto roundTrip = [&](const proto::MsgHeader &h, const Tensor *t) {
    sendMessage(out, h, t);
    auto frames = receiveFrames(in, std::chrono::milliseconds(3000));
    REQUIRE(frames);
    return std::move(*frames);
  };
  // A request: one frame, which decodes to a message without a tensor.
  auto frames = roundTrip(makeHeader(proto::GET_VAR, "w", 0, 4), nullptr);
  CHECK(frames.size() == 1);
  Message get = requireValue(decodeMessage(frames, 0));
  CHECK(get.header.var() == "w");
  CHECK_FALSE(get.hasTensor());
  // An empty tensor: its header alone, and an empty tensor again.
  Tensor empty(proto::F32, {0, 3});
  frames = roundTrip(makeHeader(proto::REPLY_VAR, "w", 0, 4), &empty);
  CHECK(frames.size() == 1);
  Tensor got;
  requireValue(decodeMessage(frames, 0)).moveInto(got);
  CHECK(got.dims().vec() == std::vector<int64_t>{0, 3});
  // A tensor with bytes comes in two frames; its header alone is refused.
  Tensor w(proto::F32, {2});
  frames = roundTrip(makeHeader(proto::REPLY_VAR, "w", 0, 4), &w);
  CHECK(frames.size() == 2);
  frames.parts().pop_back();
  CHECK_THAT(errorText(decodeMessage(frames, 0)), Contains("w: payload is 0 bytes but f32[2]"));
}

TEST_CASE("a payload at an odd address becomes a tensor with aligned elements", "[runtime]") {
  // ZeroMQ hands small frames over inside its receive buffer, at any offset (the UBSan build
  // caught kernels loading floats from such addresses).
  alignas(8) char buffer[1 + 3 * sizeof(float)];
  float values[3] = {1.5f, -2.0f, 3.25f};
  std::memcpy(buffer + 1, values, sizeof(values));
  std::string head = header(proto::REPLY_VAR, "w", 0, {3});
  std::vector<zmq::message_t> frames;
  frames.emplace_back(head.data(), head.size());
  frames.emplace_back(buffer + 1, sizeof(values), nullptr, nullptr); // zero copy, misaligned
  Message msg = requireValue(decodeMessage(frames, 0));
  Tensor t;
  msg.moveInto(t);
  CHECK(reinterpret_cast<uintptr_t>(t.raw()) % alignof(float) == 0);
  CHECK(t.toVector<float>() == std::vector<float>{1.5f, -2.0f, 3.25f});
}

TEST_CASE("a pserver answers bad messages with an error, applies none, and keeps serving",
          "[runtime]") {
  OnePserverJob job;
  auto server = job.serve();
  zmq::context_t ctx;
  zmq::socket_t raw = rawClient(ctx, job.endpoint);
  std::string grad13(13 * 4, '\0');
  // Without a HELLO, every message is refused before it is looked at.
  CHECK_THAT(
      rawRequest(raw, {header(proto::SEND_VAR, "fc_0.w_0@GRAD", 0, {13, 1}), grad13}).error(),
      Contains("trainer 0 sent send_var on a connection that said no HELLO"));
  CHECK(rawRequest(raw, {hello(job), ""}).kind() == proto::REPLY_OK);

  proto::MsgHeader h = rawRequest(raw, {"garbage bytes"});
  CHECK(h.kind() == proto::REPLY_ERROR);
  CHECK_THAT(h.error(), Contains("header is not a valid MsgHeader"));
  h = rawRequest(raw, {hello(job), "", ""});
  CHECK_THAT(h.error(), Contains("expected a header and at most one payload frame, got 3"));
  h = rawRequest(raw, {"\x08\x01\x10\x01 not protobuf \xff\xff", ""});
  CHECK(h.kind() == proto::REPLY_ERROR);
  h = rawRequest(raw, {header(proto::SEND_VAR, "fc_0.w_0@GRAD", 0, {13, 1}), std::string(10, 'x')});
  CHECK_THAT(h.error(), Contains("payload is 10 bytes but f32[13,1] needs 52"));
  h = rawRequest(raw, {header(proto::SEND_VAR, "fc_0.w_0@GRAD", 0, {12, 1}), std::string(48, 'x')});
  CHECK_THAT(h.error(), Contains("fc_0.w_0@GRAD must be f32[13,1]"));
  h = rawRequest(raw, {header(proto::SEND_VAR, "nope@GRAD", 0, {13, 1}), grad13});
  CHECK_THAT(h.error(), Contains("var nope@GRAD is not a gradient this pserver takes"));
  h = rawRequest(raw, {header(proto::SEND_VAR, "fc_0.w_0@GRAD", 7, {13, 1}), grad13});
  CHECK_THAT(h.error(), Contains("trainer id 7 is out of range"));
  h = rawRequest(raw, {header(proto::GET_VAR, "learning_rate_0", 0), ""});
  CHECK_THAT(h.error(), Contains("not a parameter this pserver serves"));

  // The params are still the startup's: nothing bad was applied.
  Executor exec;
  Scope fresh;
  REQUIRE_OK(exec.run(job.r.pserverStartup(0), fresh));
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  std::vector<Tensor> got(2);
  REQUIRE_OK(
      t0.getVars({"fc_0.w_0", "fc_0.b_0"}, {job.endpoint, job.endpoint}, {&got[0], &got[1]}));
  CHECK(got[0].toVector<float>() == fresh.find("fc_0.w_0")->toVector<float>());
  CHECK(got[1].toVector<float>() == fresh.find("fc_0.b_0")->toVector<float>());
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == ""); // exits by itself, successfully, once both completed
}

TEST_CASE("a pserver loading params refuses a listen_and_serv or block it cannot slice",
          "[runtime][errors]") {
  OnePserverJob job; // 1 pserver: its blocks are the whole params
  std::string dir = scratchDir("load_blocks");
  Scope whole;
  REQUIRE_OK(Executor().run(job.r.pserverStartup(0), whole));
  for (const ParamPlan &p : job.r.plan.params)
    REQUIRE_OK(writeNpy(dir + "/" + p.param + ".npy", *whole.find(p.param)));
  Node opts;
  opts.options.timeouts = shortTimeouts();
  opts.options.loadDir = dir;
  auto refusal = [&](proto::Program pserver) {
    return errorText(runPserver({std::move(pserver), job.r.pserverStartup(0)}, opts));
  };
  size_t blocks = job.r.plan.params.size();

  proto::Program lists = job.r.pserver(0);
  for (proto::Op &op : *lists.mutable_blocks(0)->mutable_ops())
    for (proto::Attr &a : *op.mutable_attrs())
      if (a.name() == "block_params")
        a.mutable_strings()->mutable_v()->RemoveLast();
  CHECK_THAT(refusal(lists),
             Contains("listen_and_serv: " + std::to_string(blocks) + " param_blocks but " +
                      std::to_string(blocks - 1) + " block_params"));

  proto::Program scalar = job.r.pserver(0); // a block declared without rows
  const std::string &first = job.r.plan.params[0].param;
  for (proto::Var &v : *scalar.mutable_blocks(0)->mutable_vars())
    if (v.name() == first)
      v.mutable_type()->clear_dims();
  CHECK_THAT(refusal(scalar),
             Contains("listen_and_serv: param block " + first + " is declared without rows"));

  proto::Program undeclared = job.r.pserver(0); // its var renamed away
  for (proto::Var &v : *undeclared.mutable_blocks(0)->mutable_vars())
    if (v.name() == first)
      v.set_name("elsewhere");
  CHECK_THAT(refusal(undeclared),
             Contains("listen_and_serv: param block " + first + " is not declared"));
}

TEST_CASE("geo_sync refuses block rows that do not cut its param, naming the param",
          "[runtime][errors]") {
  std::string dir = scratchDir("geo_rows");
  std::vector<float> x(20 * 13, 0.5f), y(20, 1.0f);
  REQUIRE_OK(writeNpy(dir + "/x.npy", Tensor::fromVector<float>({20, 13}, x)));
  REQUIRE_OK(writeNpy(dir + "/y.npy", Tensor::fromVector<float>({20, 1}, y)));
  RecipeSpec spec; // fit_a_line: fc_0.w_0 [13, 1] and fc_0.b_0 [1]
  spec.format = "npy", spec.data = {dir + "/x.npy", dir + "/y.npy"}, spec.batchSize = 10;
  ModelBuilder m = requireValue(buildRecipe(spec));
  DistributeConfig c;
  c.mode = Mode::Geo, c.trainers = 1;
  std::shared_ptr<HeldPort> port = holdPort();
  c.pservers = {endpointOf(*port)};
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  proto::Program trainer = r.trainer(); // fc_0.b_0 (params sort by name) gets 12 rows of 1
  for (proto::Op &op : *trainer.mutable_blocks(0)->mutable_ops())
    if (op.type() == "geo_sync")
      for (proto::Attr &a : *op.mutable_attrs())
        if (a.name() == "block_rows")
          a.mutable_ints()->set_v(0, 12);
  Node opts;
  opts.heldPort = port;
  opts.options.timeouts = shortTimeouts();
  opts.options.timeouts.idle = std::chrono::milliseconds(3000);
  auto server = servePserver({r.pserver(0), r.pserverStartup(0)}, opts);
  std::optional<EvalResult> eval;
  CHECK_THAT(errorText(runTrainer({trainer, r.trainerStartup()}, opts, eval)),
             Contains("geo_sync: block_rows of param fc_0.b_0 do not add up to its rows ([1])"));
  server.get(); // ends: its one trainer is gone
}

TEST_CASE("a trainer of another job is refused, and the refusal names nothing of the pserver's "
          "job that a forged HELLO would need",
          "[runtime]") {
  OnePserverJob job;
  auto server = job.serve();
  Communicator wrong(0, {job.endpoint}, shortTimeouts());
  JobIdentity other = job.job();
  other.mode = Mode::Async;
  other.planDigest = "0x0123456789abcdef"; // a guess: the refusal must not answer with the real one
  CHECK_THAT(errorText(wrong.connect(other)),
             Contains("job mismatch: trainer 0 runs mode async with 2 trainers") &&
                 Contains("which is not this pserver's job") && !Contains(job.job().planDigest));
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.connect(job.job()));
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == "");
}

TEST_CASE("a trainer that cannot reach its pserver gives up naming the endpoint", "[runtime]") {
  UnservedPort nobodys;
  std::string ep = nobodys.endpoint();
  Timeouts t = shortTimeouts();
  t.connect = std::chrono::milliseconds(800);
  Communicator c(0, {ep}, t);
  CHECK_THAT(errorText(c.connect({Mode::Sync, 1, "x"})), Contains("cannot reach pserver " + ep));
}

TEST_CASE("the role comes from Paddle's variables or from TF_CONFIG", "[runtime]") {
  std::map<std::string, std::string> env{{"PADDLE_TRAINING_ROLE", "PSERVER"},
                                         {"PADDLE_PSERVER_IPS", "10.0.0.1,10.0.0.2"},
                                         {"PADDLE_PSERVER_PORT", "6174"},
                                         {"PADDLE_TRAINERS", "3"},
                                         {"PADDLE_CURRENT_IP", "10.0.0.2"}};
  auto get = [&](const char *n) { return env.count(n) ? env[n].c_str() : nullptr; };
  ClusterSpec s = requireValue(clusterFromEnv(get));
  CHECK(s.role == Role::Pserver);
  CHECK(s.pservers == std::vector<std::string>{"10.0.0.1:6174", "10.0.0.2:6174"});
  CHECK(s.trainers == 3);
  CHECK(requireValue(pserverIndex(s)) == 1);

  env = {{"TF_CONFIG", R"({"cluster": {"ps": ["h1:1", "h2:2"], "worker": ["w1:3", "w2:4", "w3:5"]},
                           "task": {"type": "worker", "index": 2}})"}};
  s = requireValue(clusterFromEnv(get));
  CHECK(s.role == Role::Trainer);
  CHECK(s.trainerId == 2);
  CHECK(s.trainers == 3);
  CHECK(s.pservers.size() == 2);

  env = {{"PADDLE_TRAINING_ROLE", "BOSS"}};
  CHECK_THAT(errorText(clusterFromEnv(get)), Contains("PADDLE_TRAINING_ROLE is \"BOSS\""));
  env = {{"TF_CONFIG", "{not json"}};
  CHECK_THAT(errorText(clusterFromEnv(get)), Contains("TF_CONFIG is not valid JSON"));
}

TEST_CASE("a pserver refuses to start when another process holds its local IPC name", "[runtime]") {
  OnePserverJob job;
  zmq::context_t ctx;
  zmq::socket_t squatter(ctx, zmq::socket_type::router);
  squatter.bind(*localIpcAddress(job.endpoint)); // where local trainers would connect
  std::string result = job.serve().get();
  CHECK_THAT(result,
             Contains("ipc://@oar-" + job.endpoint) && Contains("another process holds the name"));
}

TEST_CASE("a refused HELLO changes nothing: the real trainer still gets in", "[runtime]") {
  OnePserverJob job;
  auto server = job.serve();
  zmq::context_t ctx;
  zmq::socket_t raw = rawClient(ctx, job.endpoint);
  proto::MsgHeader forged = makeHeader(proto::HELLO, "", 0, 1000000000000);
  forged.set_mode("sync");
  forged.set_trainers(2);
  forged.set_plan_digest("not this job");
  proto::MsgHeader h = rawRequest(raw, {forged.SerializeAsString(), ""});
  CHECK(h.kind() == proto::REPLY_ERROR);
  job.finishCleanly(server, job.job()); // at step 0, after the refused step 10^12
}

TEST_CASE("a pserver reads no gradient from the memory of a peer it did not verify, itself "
          "included",
          "[runtime][errors]") {
  OnePserverJob job;
  auto server = job.serve();
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer); // over the local IPC name: the kernel says
  raw.set(zmq::sockopt::linger, 0);                 // which process we are
  raw.connect(connectAddress(job.endpoint));
  // Our probe reads back from our memory, but we are the pserver's own process: a peer that
  // saw the pserver's probe in a HELLO reply could otherwise point it at its own memory.
  proto::MsgHeader hi;
  REQUIRE(hi.ParseFromString(hello(job)));
  offerPeerMemory(hi);
  proto::MsgHeader h = rawRequest(raw, {hi.SerializeAsString(), ""});
  REQUIRE(h.kind() == proto::REPLY_OK);
  CHECK_FALSE(h.reads_peer_memory());
  float grad[13] = {};
  proto::MsgHeader send = makeHeader(proto::SEND_VAR, "fc_0.w_0@GRAD", 0, 0);
  send.set_dtype(proto::F32);
  send.add_dims(13);
  send.add_dims(1);
  send.set_peer_address(reinterpret_cast<uint64_t>(grad));
  CHECK_THAT(rawRequest(raw, {send.SerializeAsString(), ""}).error(),
             Contains("trainer 0: fc_0.w_0@GRAD's payload lies in its memory, but it offered no "
                      "probe that reads back"));
  send.clear_peer_address();
  send.set_landed(true); // "written into your memory already": nowhere was announced
  CHECK_THAT(rawRequest(raw, {send.SerializeAsString(), ""}).error(),
             Contains("trainer 0 says it wrote fc_0.w_0@GRAD into this pserver's memory, but no "
                      "place for it was announced"));
  proto::MsgHeader barrier = makeHeader(proto::SEND_BARRIER, "", 0, 0);
  barrier.set_dtype(proto::F32);
  barrier.add_dims(13);
  barrier.set_peer_address(reinterpret_cast<uint64_t>(grad));
  CHECK_THAT(rawRequest(raw, {barrier.SerializeAsString(), ""}).error(),
             Contains("only a send_var or a reply_var leaves its payload in the sender's memory"));
  job.finishCleanly(server, job.job()); // nothing was applied for step 0
}

TEST_CASE("a pserver whose trainer failed ends with an error naming it, not success", "[runtime]") {
  OnePserverJob job;
  auto server = job.serve();
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete("step 3: loss is nan"));
  CHECK_THAT(server.get(), Contains("trainer(s) 1 failed; the first: step 3: loss is nan"));
}

TEST_CASE("a trainer that gives up after another one took a checkpointing pserver back still "
          "tells it that it left",
          "[runtime][checkpoint]") {
  // Trainer 0 reconnects and takes the pserver back to its checkpoint, which makes the pserver
  // forget trainer 1's HELLO. Trainer 1 then gives up: its COMPLETE on the old connection is
  // refused, and unless it says HELLO again the pserver waits on it until its idle timeout.
  OnePserverJob job;
  Node opts = job.options();
  opts.options.checkpoints.dir = scratchDir("pserver_rollback_complete");
  opts.options.checkpoints.every = 1;
  auto server = servePserver({job.r.pserver(0), job.r.pserverStartup(0)}, opts);
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  Tensor w = Tensor::fromVector<float>({13, 1}, std::vector<float>(13, 0.5f));
  Tensor b = Tensor::fromVector<float>({1}, {0.5f});
  for (int step = 0; step < 2; ++step)
    for (Communicator *t : {&t0, &t1}) {
      REQUIRE_OK(t->sendVars({{"fc_0.w_0@GRAD", &w}, {"fc_0.b_0@GRAD", &b}},
                             {job.endpoint, job.endpoint}));
      REQUIRE_OK(t->barrier(proto::SEND_BARRIER));
    }
  REQUIRE_OK(t0.reconnect(job.job()));
  CHECK(t0.step() == 2);
  REQUIRE_OK(t1.complete("gave up"));
  REQUIRE_OK(t0.complete());
  REQUIRE(server.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  CHECK_THAT(server.get(), Contains("trainer(s) 1 failed; the first: gave up"));
}

TEST_CASE("with --nonfinite-grads=skip a sync step leaves out the update of a param whose "
          "gradient holds NaN, and the job goes on",
          "[runtime][errors]") {
  OnePserverJob job;
  LogLines log;
  Node opts = job.options();
  opts.options.pserver.skipNonFinite = true;
  opts.log = log.sink();
  auto server = servePserver({job.r.pserver(0), job.r.pserverStartup(0)}, opts);
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  Tensor w = Tensor::fromVector<float>({13, 1}, std::vector<float>(13, 0.5f));
  Tensor b = Tensor::fromVector<float>({1}, {0.5f});
  Tensor nan = Tensor::fromVector<float>({1}, {std::nanf("")});
  auto step = [&](Tensor &bOfTrainer1) {
    REQUIRE_OK(
        t0.sendVars({{"fc_0.w_0@GRAD", &w}, {"fc_0.b_0@GRAD", &b}}, {job.endpoint, job.endpoint}));
    REQUIRE_OK(t0.barrier(proto::SEND_BARRIER));
    REQUIRE_OK(t1.sendVars({{"fc_0.w_0@GRAD", &w}, {"fc_0.b_0@GRAD", &bOfTrainer1}},
                           {job.endpoint, job.endpoint}));
    REQUIRE_OK(t1.barrier(proto::SEND_BARRIER));
  };
  auto params = [&] {
    std::vector<Tensor> got(2);
    REQUIRE_OK(
        t0.getVars({"fc_0.w_0", "fc_0.b_0"}, {job.endpoint, job.endpoint}, {&got[0], &got[1]}));
    return std::make_pair(got[0].toVector<float>(), got[1].toVector<float>());
  };
  step(b);
  auto first = params();
  step(nan); // trainer 1's bias gradient is NaN: the bias keeps its value, the weights move
  auto second = params();
  CHECK(second.second == first.second);
  CHECK(second.first != first.first);
  for (float v : second.first)
    CHECK(std::isfinite(v));
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == "");
  std::string lines = llvm::join(log.lines, "\n");
  CHECK_THAT(lines, Contains("gradient fc_0.b_0@GRAD from trainer 1 for step 1 holds nan at "
                             "element 0; its update is skipped (--nonfinite-grads=skip)"));
  CHECK_THAT(lines, Contains("skipped 1 update(s) holding NaN or inf"));
}

TEST_CASE("async: a trainer declared lost is refused from then on, and nothing of it applied",
          "[runtime]") {
  OnePserverJob job("async");
  job.timeouts.barrier = std::chrono::milliseconds(400);
  auto server = job.serve();
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  // Trainer 0 keeps training (pulling) while trainer 1 stalls past the barrier timeout.
  Tensor before;
  for (int i = 0; i < 12; ++i) {
    REQUIRE_OK(t0.getVars({"fc_0.b_0"}, {job.endpoint}, {&before}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Trainer 1 resumes: its gradient and its pull are refused, naming why.
  Tensor grad = Tensor::fromVector<float>({1}, {1000.0f});
  REQUIRE_OK(t1.sendVars({{"fc_0.b_0@GRAD", &grad}}, {job.endpoint}));
  Tensor got;
  std::string why = errorText(t1.getVars({"fc_0.b_0"}, {job.endpoint}, {&got}));
  CHECK_THAT(why, Contains("trainer 1 was declared lost"));
  Tensor after;
  REQUIRE_OK(t0.getVars({"fc_0.b_0"}, {job.endpoint}, {&after}));
  CHECK(after.toVector<float>() == before.toVector<float>());
  REQUIRE_OK(t0.complete());
  CHECK_THAT(server.get(), Contains("trainer(s) 1 were lost before completing"));
}

TEST_CASE("a frame larger than any message of the plan is cut off, and the pserver serves on",
          "[runtime]") {
  OnePserverJob job; // its largest message is a 13-float gradient
  auto server = job.serve();
  zmq::context_t ctx;
  zmq::socket_t raw = rawClient(ctx, job.endpoint);
  std::string huge(8 << 20, 'x');
  raw.send(zmq::message_t(huge.data(), huge.size()), zmq::send_flags::none);
  CHECK_FALSE(receiveFrames(raw, std::chrono::milliseconds(1000))); // dropped: no reply
  job.finishCleanly(server, job.job());
}

TEST_CASE("a log budget lets a burst through per source and then counts what it held back",
          "[runtime]") {
  LogLimiter limiter(2, std::chrono::seconds(10));
  auto t0 = LogLimiter::Clock::now();
  int64_t held = -1;
  CHECK(limiter.allow("10.0.0.1", held, t0));
  CHECK(held == 0);
  CHECK(limiter.allow("10.0.0.1", held, t0));
  CHECK(!limiter.allow("10.0.0.1", held, t0));
  CHECK(!limiter.allow("10.0.0.1", held, t0 + std::chrono::seconds(9)));
  CHECK(limiter.allow("10.0.0.2", held, t0)); // another address has its own budget
  CHECK(limiter.allow("10.0.0.1", held, t0 + std::chrono::seconds(10)));
  CHECK(held == 2);
}

TEST_CASE("many peers flooding a server share one log budget per window", "[runtime]") {
  LogLimiter limiter(5, std::chrono::seconds(10));
  auto t0 = LogLimiter::Clock::now();
  int64_t held = 0;
  int allowed = 0;
  for (int peer = 0; peer < 300; ++peer)
    for (int line = 0; line < 5; ++line)
      allowed += limiter.allow("peer " + std::to_string(peer), held, t0);
  CHECK(allowed == 5 * LogLimiter::kSourcesPerTotal);
  // The next window opens the budget again, and the line says how many were held back.
  CHECK(limiter.allow("peer 299", held, t0 + std::chrono::seconds(10)));
  CHECK(held == 5);
}

TEST_CASE("a peer flooding a pserver with junk gets a few log lines, not one per message",
          "[runtime]") {
  OnePserverJob job;
  LogLines log;
  auto server = job.serve("", &log);
  zmq::context_t ctx;
  zmq::socket_t raw = rawClient(ctx, job.endpoint);
  for (int i = 0; i < 50; ++i) // every one is answered with an error...
    CHECK(rawRequest(raw, {"junk " + std::to_string(i)}).kind() == proto::REPLY_ERROR);
  job.finishCleanly(server, job.job());
  int rejected = 0; // ...but the log names the address 5 times in its 10 s window
  for (const std::string &line : log.lines)
    if (line.find("rejected a message") != std::string::npos) {
      ++rejected;
      CHECK_THAT(line, Contains("[from localhost:")); // its local socket: host, user, process
    }
  CHECK(rejected == 5);
}

TEST_CASE("a pserver refuses a trainer of another launch of the same model", "[runtime]") {
  OnePserverJob job;
  auto server = job.serve("launch-a");
  JobIdentity other = job.job();
  other.jobId = "launch-b";
  Communicator stray(0, {job.endpoint}, shortTimeouts());
  CHECK_THAT(errorText(stray.connect(other)),
             Contains("trainer 0 belongs to launch \"launch-b\", but this pserver to another "
                      "launch") &&
                 !Contains("launch-a"));
  JobIdentity same = job.job();
  same.jobId = "launch-a";
  job.finishCleanly(server, same);
}

TEST_CASE("OAR_JOB_ID names the launch a node belongs to", "[runtime]") {
  auto spec = requireValue(clusterFromEnv([](const char *name) -> const char * {
    std::string n = name;
    if (n == "PADDLE_TRAINING_ROLE")
      return "TRAINER";
    if (n == "PADDLE_PSERVERS_IP_PORT_LIST")
      return "127.0.0.1:6170";
    if (n == "PADDLE_TRAINERS")
      return "1";
    if (n == "PADDLE_TRAINER_ID")
      return "0";
    if (n == "OAR_JOB_ID")
      return "5eed";
    return nullptr;
  }));
  CHECK(spec.jobId == "5eed");
}

TEST_CASE("async: 8 trainers pushing at once for seconds lose no update and apply none twice",
          "[e2e][runtime]") {
  // fit_a_line with SGD at learning rate 1: each push of a bias gradient of 1 moves the bias,
  // which starts at 0, by exactly -1, so the end value counts the updates applied.
  RecipeSpec spec;
  spec.lr = 1.0f;
  ModelBuilder m = requireValue(buildRecipe(spec));
  DistributeConfig c;
  c.mode = Mode::Async;
  c.trainers = 8;
  std::shared_ptr<HeldPort> port = holdPort();
  std::string endpoint = endpointOf(*port);
  c.pservers = {endpoint};
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  Node opts;
  opts.heldPort = port;
  opts.options.timeouts = shortTimeouts();
  auto server = servePserver({r.pserver(0), r.pserverStartup(0)}, std::move(opts));
  JobIdentity job{Mode::Async, 8, r.trainer().dist().plan_digest()};
  // 3 s in the suite; OAR_NO_LOSS_SECONDS=30 runs the issue's 30 s.
  const char *secs = std::getenv("OAR_NO_LOSS_SECONDS");
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(secs ? std::atoi(secs) : 3);
  std::vector<int64_t> pushed(8, 0);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int t = 0; t < 8; ++t)
    comms.push_back(std::make_unique<Communicator>(t, std::vector{endpoint}, shortTimeouts()));
  std::vector<std::future<std::string>> trainers;
  for (int t = 0; t < 8; ++t)
    trainers.push_back(std::async(std::launch::async, [&, t]() -> std::string {
      Communicator &comm = *comms[t];
      if (llvm::Error err = comm.connect(job))
        return llvm::toString(std::move(err));
      Tensor one = Tensor::fromVector<float>({1}, {1.0f});
      while (std::chrono::steady_clock::now() < until) {
        if (llvm::Error err = comm.sendVars({{"fc_0.b_0@GRAD", &one}}, {endpoint}))
          return llvm::toString(std::move(err));
        ++pushed[t];
      }
      llvm::Error err = comm.flush(); // every push acknowledged
      return err ? llvm::toString(std::move(err)) : std::string();
    }));
  for (auto &t : trainers)
    CHECK(t.get() == "");
  int64_t total = 0;
  for (int64_t p : pushed)
    total += p;
  INFO(total << " pushes from 8 trainers");
  CHECK(total > 8 * 100);
  // A get_var is answered after the updates queued before it: the bias has every push.
  Tensor bias;
  REQUIRE_OK(comms[0]->getVars({"fc_0.b_0"}, {endpoint}, {&bias}));
  CHECK(bias.data<float>()[0] == -static_cast<float>(total));
  for (auto &comm : comms)
    REQUIRE_OK(comm->complete());
  CHECK(server.get() == "");
}

TEST_CASE("unauthenticated, a pserver serves its own host unless --bind says otherwise",
          "[runtime]") {
  // Advertised at an address of another network: without --bind it binds 127.0.0.1 at that port.
  OnePserverJob job;
  std::string port = llvm::StringRef(job.endpoint).rsplit(':').second.str();
  std::string advertised = "10.255.255.1:" + port;
  DistributeConfig c;
  c.mode = Mode::Sync;
  c.trainers = 2;
  c.pservers = {advertised};
  ModelBuilder m = requireValue(buildRecipe(RecipeSpec{}));
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  LogLines log;
  Node opts = job.options(); // the port it binds at 127.0.0.1 is the job's
  opts.options.timeouts.idle = std::chrono::milliseconds(1500); // ends by itself
  opts.log = log.sink();
  auto server = servePserver({r.pserver(0), r.pserverStartup(0)}, std::move(opts));
  zmq::context_t ctx;
  zmq::socket_t raw(ctx, zmq::socket_type::dealer); // TCP: its endpoint is not loopback
  raw.set(zmq::sockopt::linger, 0);
  raw.connect(zmqAddress("127.0.0.1:" + port));
  CHECK(rawRequest(raw, {"junk"}).kind() == proto::REPLY_ERROR); // it answers on 127.0.0.1
  CHECK_THAT(server.get(), Contains("no message from any trainer"));
  std::string all;
  for (const std::string &l : log.lines)
    all += l + "\n";
  CHECK_THAT(
      all, Contains("binding 127.0.0.1:" + port + " only (this host): pass --bind " + advertised));
}

TEST_CASE("a complete from a connection that said no HELLO is refused: a restarted pserver does "
          "not finish on it",
          "[runtime]") {
  OnePserverJob job;
  auto server = job.serve();
  zmq::context_t ctx;
  zmq::socket_t raw = rawClient(ctx, job.endpoint);
  for (int t = 0; t < 2; ++t) // what the trainers of a job whose pserver restarted would send
    CHECK_THAT(rawRequest(raw, {header(proto::COMPLETE, "", t), ""}).error(),
               Contains("sent complete on a connection that said no HELLO"));
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  // A connection other than the trainer's own cannot speak for it after its HELLO either.
  CHECK_THAT(rawRequest(raw, {header(proto::COMPLETE, "", 0), ""}).error(),
             Contains("trainer 0 sent complete on a connection that said no HELLO"));
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == "");
}
