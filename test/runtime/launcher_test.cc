// The launcher's choices that need no processes: which --num-threads a node gets.
#include "runtime/launcher.h"
#include "test/support/expect.h"

using oar::runtime::nodeThreadsFlag;

TEST_CASE("oar-launch adds a node's share of threads only where none was set by hand",
          "[runtime]") {
  std::vector<std::string> none, nodeFlag{"--geo-k-steps", "10", "--num-threads=3"};
  // Nothing set: the node's share.
  CHECK(nodeThreadsFlag(none, false, 0, 2) == "--num-threads=2");
  CHECK(nodeThreadsFlag(none, false, 0, 0) == "--num-threads=1");
  // OMP_NUM_THREADS: every node reads it, so no flag overrides it.
  CHECK(nodeThreadsFlag(none, true, 0, 1) == std::nullopt);
  // --server-threads / --worker-threads beat OMP_NUM_THREADS ...
  CHECK(nodeThreadsFlag(none, true, 4, 1) == "--num-threads=4");
  CHECK(nodeThreadsFlag(none, false, 4, 1) == "--num-threads=4");
  // ... and --num-threads among every node's flags beats both.
  CHECK(nodeThreadsFlag(nodeFlag, false, 4, 1) == std::nullopt);
  CHECK(nodeThreadsFlag(nodeFlag, true, 0, 1) == std::nullopt);
}
