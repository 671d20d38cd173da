// Thread budgets set by hand: OMP_NUM_THREADS as a node reads it, and the flag oar-launch adds.
#include "executor/threads.h"
#include "runtime/launcher.h"
#include "test/support/expect.h"

using namespace oar;

TEST_CASE("OMP_NUM_THREADS gives its first level as the budget, and nothing when unset",
          "[executor]") {
  CHECK(!*ompNumThreads(nullptr));
  CHECK(!*ompNumThreads(""));
  CHECK(!*ompNumThreads("  "));
  CHECK(*ompNumThreads("1") == 1);
  CHECK(*ompNumThreads(" 8 ") == 8);
  CHECK(*ompNumThreads("4,2") == 4);
  CHECK(*ompNumThreads("4096") == 4096);
}

TEST_CASE("an OMP_NUM_THREADS that is not a thread count is refused by name", "[executor]") {
  for (const char *bad : {"0", "-2", "two", "2.5", "4097", "99999999999", ",2"})
    CHECK(errorText(ompNumThreads(bad)) ==
          std::string("OMP_NUM_THREADS \"") + bad + "\" is not a thread count from 1 to 4096");
}

TEST_CASE("oar-launch adds a node's share of threads only where none was set by hand",
          "[runtime]") {
  using runtime::nodeThreadsFlag;
  std::vector<std::string> none, nodeFlag{"--geo-k-steps", "10", "--num-threads=3"};
  // Nothing set: the node's share.
  CHECK(nodeThreadsFlag(none, nullptr, 0, 2) == "--num-threads=2");
  CHECK(nodeThreadsFlag(none, "", 0, 0) == "--num-threads=1");
  // OMP_NUM_THREADS: every node reads it, so no flag overrides it.
  CHECK(nodeThreadsFlag(none, "2", 0, 1) == std::nullopt);
  // --server-threads / --worker-threads beat OMP_NUM_THREADS ...
  CHECK(nodeThreadsFlag(none, "2", 4, 1) == "--num-threads=4");
  CHECK(nodeThreadsFlag(none, nullptr, 4, 1) == "--num-threads=4");
  // ... and --num-threads among every node's flags beats both.
  CHECK(nodeThreadsFlag(nodeFlag, nullptr, 4, 1) == std::nullopt);
  CHECK(nodeThreadsFlag(nodeFlag, "2", 0, 1) == std::nullopt);
}
