// The library's entry to a node (runtime/node/start_node.h): a job's pserver and trainer run
// in this process through startNode, without oar-executor, and train as one machine does.
#include <future>
#include <mutex>

#include "api/recipes.h"
#include "executor/npy.h"
#include "ir/program.h"
#include "runtime/node/start_node.h"
#include "runtime/transport/held_port.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"
#include "llvm/Support/raw_ostream.h"

using namespace oar;
using namespace oar::runtime;

using Catch::Matchers::Contains;

namespace {

/// What one node printed, logged and ended with.
struct NodeRun {
  std::string out, errors;
  std::vector<std::string> log;
  int status = -1;
};

/// Runs startNode with an empty environment (no launch convention: the flags alone place it),
/// `port` held for its server.
NodeRun runNode(const NodeOptions &options, std::shared_ptr<HeldPort> port = nullptr) {
  NodeRun r;
  std::mutex mutex;
  llvm::raw_string_ostream out(r.out);
  NodeIo io;
  io.getenv = [](const char *) -> const char * { return nullptr; };
  io.out = &out;
  io.log = [&](const std::string &line) {
    std::lock_guard<std::mutex> lock(mutex);
    r.log.push_back(line);
  };
  io.error = [&](const std::string &why) {
    std::lock_guard<std::mutex> lock(mutex);
    r.errors += why + "\n";
  };
  io.heldPort = std::move(port);
  r.status = startNode(options, io);
  out.flush();
  return r;
}

std::string joined(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &l : lines)
    text += l + "\n";
  return text;
}

/// fit_a_line on UCI housing, two epochs, written as main.pb and startup.pb in `dir`.
NodeOptions fitALine(const std::string &dir) {
  RecipeSpec spec;
  spec.format = "uci_housing";
  spec.data = {sourceDir() + "/data/uci_housing/housing.data"};
  spec.epochs = 2;
  spec.batchSize = 20;
  ModelBuilder m = requireValue(buildRecipe(spec));
  REQUIRE_OK(saveProgram(m.main(), dir + "/main.pb", "start_node_test"));
  REQUIRE_OK(saveProgram(m.startup(), dir + "/startup.pb", "start_node_test"));
  NodeOptions o;
  o.mainPath = dir + "/main.pb", o.startupPath = dir + "/startup.pb";
  o.numThreads = 1; // both nodes share this process's thread budget: one GEMM order for all
  o.timeouts.connect = o.timeouts.reply = o.timeouts.barrier = std::chrono::milliseconds(20000);
  return o;
}

} // namespace

TEST_CASE("a pserver and a trainer started through startNode in this process train as one "
          "machine does",
          "[runtime]") {
  std::string dir = scratchDir("start_node_job");
  NodeOptions one = fitALine(dir);
  one.saveDir = dir + "/one";
  NodeRun alone = runNode(one);
  INFO(alone.errors << joined(alone.log));
  REQUIRE(alone.status == 0);
  CHECK_THAT(alone.out,
             Contains("trained 42 steps")); // 404 train rows / 20 x 2 epochs (last short)

  std::shared_ptr<HeldPort> port = holdPort();
  std::string endpoint = endpointOf(*port);
  NodeOptions pserver = fitALine(dir), trainer = fitALine(dir);
  for (NodeOptions *o : {&pserver, &trainer}) {
    o->place.trainers = 1;
    o->place.pservers = endpoint;
    o->config.mode = Mode::Sync;
  }
  pserver.place.role = "pserver", pserver.place.endpoint = endpoint;
  trainer.place.role = "trainer", trainer.place.trainerId = 0;
  trainer.saveDir = dir + "/job";
  auto served = std::async(std::launch::async, [&] { return runNode(pserver, port); });
  NodeRun trained = runNode(trainer);
  NodeRun ps = served.get();
  INFO("trainer: " << trained.errors << joined(trained.log) << "pserver: " << ps.errors
                   << joined(ps.log));
  REQUIRE(trained.status == 0);
  REQUIRE(ps.status == 0);
  CHECK_THAT(trained.out, Contains("trainer 0: trained 42 steps"));
  CHECK_THAT(joined(ps.log), Contains("all trainers completed"));
  // One trainer of a sync job steps as one machine: the same bits.
  for (const char *param : {"fc_0.w_0", "fc_0.b_0"}) {
    INFO(param);
    Tensor job = requireValue(readNpy(dir + "/job/" + param + ".npy"));
    Tensor single = requireValue(readNpy(dir + "/one/" + param + ".npy"));
    CHECK(job.toVector<float>() == single.toVector<float>());
  }
}

TEST_CASE("startNode reports a node it cannot start through its error line and status 1, never "
          "by exiting",
          "[runtime][errors]") {
  NodeOptions o;
  o.place.role = "pserver";
  NodeRun r = runNode(o);
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("give --dir (transpiled) or --main and --startup"));

  o.place.role = "chef";
  r = runNode(o);
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("--role \"chef\" must be trainer, pserver or scheduler"));

  NodeOptions collective;
  collective.place.role = "pserver";
  collective.config.mode = Mode::Collective;
  collective.mainPath = "main.pb", collective.startupPath = "startup.pb";
  r = runNode(collective);
  CHECK(r.status == 1);
  CHECK_THAT(r.errors, Contains("--mode collective: every node is a trainer"));
}
