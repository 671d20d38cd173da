// The trainer's client (runtime/trainer/communicator.h) against a live pserver in this process:
// a sync step through its sends, barrier and fetches; acknowledgements collected late; its
// stop check; a pserver that starts late; a refusal that is not retried.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "ir/names.h"
#include "runtime/trainer/communicator.h"
#include "test/helpers/expect.h"
#include "test/runtime/pserver_job.h"

using namespace oar;
using namespace oar::runtime;
using namespace oar::test;
using Catch::Matchers::Contains;
using Clock = std::chrono::steady_clock;

namespace {

// fit_a_line's params, both on the job's one pserver (too small to slice).
const std::vector<std::string> kParams = {"fc_0.b_0", "fc_0.w_0"};

std::vector<Tensor> fetch(Communicator &c, const std::string &endpoint) {
  std::vector<Tensor> values(kParams.size());
  std::vector<Tensor *> out{&values[0], &values[1]};
  REQUIRE_OK(c.getVars(kParams, {endpoint, endpoint}, out));
  return values;
}

/// Trainer `c`'s gradient of every param, each element `value`.
void sendGradients(Communicator &c, const std::string &endpoint, const std::vector<Tensor> &like,
                   float value, std::vector<Tensor> &keep) {
  keep.clear();
  for (const Tensor &p : like)
    keep.push_back(Tensor::fromVector<float>(
        p.dims().vec(), std::vector<float>(static_cast<size_t>(p.numel()), value)));
  std::vector<std::pair<std::string, const Tensor *>> vars;
  for (size_t i = 0; i < kParams.size(); ++i)
    vars.push_back({gradName(kParams[i]), &keep[i]});
  REQUIRE_OK(c.sendVars(vars, {endpoint, endpoint}));
}

std::vector<std::pair<std::string, std::string>> prefetchOf(const std::string &endpoint) {
  return {{kParams[0], endpoint}, {kParams[1], endpoint}};
}

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

} // namespace

TEST_CASE("a trainer's client moves one sync step: its gradients are averaged with the other "
          "trainer's, and its barrier fetches the step's params in the same round trip",
          "[runtime]") {
  OnePserverJob job; // SGD at learning rate 0.01, two trainers
  auto server = job.serve();
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  std::vector<Tensor> before = fetch(t0, job.endpoint);
  std::vector<Tensor> g0, g1;
  sendGradients(t0, job.endpoint, before, 2.0f, g0); // the average is 1: an exact step of lr
  sendGradients(t1, job.endpoint, before, 0.0f, g1);
  CHECK(t0.step() == 0);
  auto closing = std::async(std::launch::async, [&] {
    return t1.barrier(proto::SEND_BARRIER, prefetchOf(job.endpoint));
  });
  REQUIRE_OK(t0.barrier(proto::SEND_BARRIER, prefetchOf(job.endpoint)));
  REQUIRE_OK(closing.get());
  CHECK(t0.step() == 1);
  CHECK(t0.prefetched(kParams)); // the barrier's replies brought them: no request goes out
  std::vector<Tensor> after = fetch(t0, job.endpoint);
  for (size_t i = 0; i < kParams.size(); ++i) {
    INFO(kParams[i]);
    std::vector<float> want = before[i].toVector<float>();
    for (float &w : want)
      w -= 0.01f;
    CHECK(after[i].toVector<float>() == want);
  }
  std::vector<Tensor> other = fetch(t1, job.endpoint);
  CHECK(other[1].toVector<float>() == after[1].toVector<float>());
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == "");
}

TEST_CASE("a send does not wait for its acknowledgement: a gradient the pserver refuses fails "
          "the next barrier with the pserver's reason",
          "[runtime][errors]") {
  OnePserverJob job;
  auto server = job.serve();
  Communicator t0(0, {job.endpoint}, shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  Tensor wrong = Tensor::fromVector<float>({2}, {1.0f, 2.0f}); // fc_0.w_0 is f32[13,1]
  REQUIRE_OK(t0.sendVars({{gradName("fc_0.w_0"), &wrong}}, {job.endpoint}));
  CHECK_THAT(errorText(t0.barrier(proto::SEND_BARRIER)),
             Contains("pserver " + job.endpoint + " refused send_var fc_0.w_0@GRAD") &&
                 Contains("fc_0.w_0@GRAD must be f32[13,1] but the message holds f32[2]"));
  llvm::consumeError(t0.complete("the test ends here"));
  server.get();
}

TEST_CASE("a trainer's client stops waiting once its stop check says so, naming what it waited "
          "for",
          "[runtime][errors]") {
  OnePserverJob job;
  job.timeouts.barrier = std::chrono::milliseconds(20000);
  auto server = job.serve();
  std::atomic<bool> stop{false};
  Timeouts t = shortTimeouts();
  t.reply = std::chrono::milliseconds(20000);
  Communicator t0(0, {job.endpoint}, t, {}, [&stop] { return stop.load(); });
  REQUIRE_OK(t0.connect(job.job()));
  // Trainer 1 never closes the step: the pserver holds the barrier's fetches, for up to 20 s.
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
  });
  auto start = Clock::now();
  llvm::Error err = t0.barrier(proto::SEND_BARRIER, prefetchOf(job.endpoint));
  stopper.join();
  CHECK(secondsSince(start) < 10);
  CHECK_THAT(errorText(std::move(err)),
             Contains("trainer 0: stopped by signal while in send_barrier"));
  llvm::consumeError(t0.complete("stopped"));
  server.get();
}

TEST_CASE("a trainer's client reaches a pserver that starts after it, within its connect "
          "timeout",
          "[runtime]") {
  OnePserverJob job;
  Communicator t0(0, {job.endpoint}, shortTimeouts()), t1(1, {job.endpoint}, shortTimeouts());
  auto connecting = std::async(std::launch::async, [&] { return t0.connect(job.job()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto server = job.serve();
  REQUIRE_OK(connecting.get());
  REQUIRE_OK(t1.connect(job.job()));
  REQUIRE_OK(t0.complete());
  REQUIRE_OK(t1.complete());
  CHECK(server.get() == "");
}

TEST_CASE("a pserver's refusal of the job is not retried: the client fails at once, not at its "
          "connect timeout",
          "[runtime][errors]") {
  OnePserverJob job;
  auto server = job.serve();
  Timeouts t = shortTimeouts();
  t.connect = std::chrono::milliseconds(20000);
  Communicator wrong(0, {job.endpoint}, t);
  JobIdentity other = job.job();
  other.trainers = 3;
  auto start = Clock::now();
  CHECK_THAT(errorText(wrong.connect(other)), Contains("job mismatch: trainer 0 runs mode sync "
                                                       "with 3 trainers"));
  CHECK(secondsSince(start) < 10); // half the connect timeout: one attempt, not its retries
  CHECK_FALSE(wrong.needsRecovery());
  job.finishCleanly(server, job.job());
}
