// The launcher's node processes: their environment, and starts while the launcher's threads
// allocate.
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <memory>
#include <mutex>
#include <thread>

#include "runtime/cluster/launched_nodes.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;
using oar::runtime::LaunchedNodes;

TEST_CASE("a node's environment is the launcher's with the node's own names set",
          "[runtime][launch]") {
  setenv("OAR_TEST_REPLACED", "launcher's", 1);
  setenv("OAR_TEST_KEPT", "kept", 1);
  std::mutex linesMutex;
  std::string lines;
  {
    LaunchedNodes nodes(
        "/bin/sh",
        [&](const std::string &line) {
          std::lock_guard<std::mutex> lock(linesMutex);
          lines += line + "\n";
        },
        5);
    nodes.start("trainer.0", {"-c", "echo \"$OAR_TEST_REPLACED/$OAR_TEST_KEPT/$OAR_TEST_ADDED\""},
                {{"OAR_TEST_REPLACED", "node's"}, {"OAR_TEST_ADDED", "added"}});
    REQUIRE(nodes.startFailure().empty());
    CHECK(nodes.watch(false, 60).reason.empty());
  }
  unsetenv("OAR_TEST_REPLACED");
  unsetenv("OAR_TEST_KEPT");
  CHECK_THAT(lines, Contains("[trainer.0] node's/kept/added"));
}

TEST_CASE("a node that cannot be run says so and exits 127", "[runtime][launch]") {
  LaunchedNodes nodes("/nonexistent/oar-executor", nullptr, 5);
  nodes.start("pserver.0", {}, {});
  REQUIRE(nodes.startFailure().empty());
  auto outcome = nodes.watch(false, 60);
  nodes.stopAll(); // as oar-launch does: the node's output is read to its end only then
  INFO(outcome.reason);
  REQUIRE(outcome.failed);
  CHECK_THAT(outcome.reason, Contains("exit status 127"));
  REQUIRE(!outcome.failed->tail.empty());
  CHECK(outcome.failed->tail.back() ==
        "cannot run /nonexistent/oar-executor: No such file or directory");
}

// A node was once forked while another thread of the launcher held the allocator's lock, and
// called setenv (malloc) before exec: under AddressSanitizer's allocator it waited for that
// lock forever, and its job timed out. Most starts miss the window, so there are many here,
// each while other threads allocate.
TEST_CASE("nodes start while the launcher's other threads allocate", "[runtime][launch]") {
  // One thread allocates and another frees: their caches of small blocks empty and fill all
  // the time, so the allocator's shared lists (and their locks) are in use most of it.
  std::atomic<bool> stop{false};
  std::mutex handMutex;
  std::vector<std::unique_ptr<std::string>> handed;
  std::thread allocates([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::vector<std::unique_ptr<std::string>> made;
      for (int i = 0; i < 256; ++i)
        made.push_back(std::make_unique<std::string>(static_cast<size_t>(16 + (i % 8) * 8), 'x'));
      std::lock_guard<std::mutex> lock(handMutex);
      std::move(made.begin(), made.end(), std::back_inserter(handed));
    }
  });
  std::thread frees([&] {
    while (!stop.load(std::memory_order_relaxed)) {
      std::vector<std::unique_ptr<std::string>> taken; // freed at the end of the iteration
      std::lock_guard<std::mutex> lock(handMutex);
      taken.swap(handed);
    }
  });
  std::string failure;
  for (int round = 0; round < 10 && failure.empty(); ++round) {
    LaunchedNodes nodes(
        "/bin/sh", [](const std::string &) {}, 5);
    for (int i = 0; i < 20; ++i)
      nodes.start("trainer." + std::to_string(i), {"-c", "echo started"},
                  {{"OAR_TEST_NODE", std::to_string(i)}});
    failure = nodes.startFailure();
    if (failure.empty())
      failure = nodes.watch(false, 60).reason;
  }
  stop = true;
  allocates.join();
  frees.join();
  INFO(failure);
  CHECK(failure.empty());
}
