// Thread budgets set by hand: OMP_NUM_THREADS as a node reads it.
#include "executor/threads.h"
#include "runtime/cluster/node_threads.h"
#include "support/endpoint.h"
#include "test/helpers/expect.h"

#include <cstdlib>
#include <string>

using namespace oar;

TEST_CASE("OMP_NUM_THREADS gives its first level as the budget, and nothing when unset",
          "[executor]") {
  CHECK(!requireValue(ompNumThreads(nullptr)));
  CHECK(!requireValue(ompNumThreads("")));
  CHECK(!requireValue(ompNumThreads("  ")));
  CHECK(requireValue(ompNumThreads("1")) == 1);
  CHECK(requireValue(ompNumThreads(" 8 ")) == 8);
  CHECK(requireValue(ompNumThreads("4,2")) == 4);
  CHECK(requireValue(ompNumThreads("4, 2 ,1")) == 4);
  CHECK(requireValue(ompNumThreads("4096")) == 4096);
}

TEST_CASE("an OMP_NUM_THREADS that is not a list of thread counts is refused by name",
          "[executor]") {
  for (const char *bad :
       {"0", "-2", "two", "2.5", "4097", "99999999999", ",2", "4,", "4,x", "4,0", " 4,,2"})
    CHECK(errorText(ompNumThreads(bad)) == std::string("OMP_NUM_THREADS \"") + bad +
                                               "\" is not a list of thread counts from 1 to 4096");
}

TEST_CASE("a node's thread line names its budget, its source, and how idle threads wait when "
          "there can be any",
          "[executor]") {
  int before = computeThreads();
  std::string policy = std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "";
  ::unsetenv("GOMP_SPINCOUNT");
  ::setenv("OMP_WAIT_POLICY", "active", 1);
  setComputeThreads(1); // one thread never waits, whatever the policy
  CHECK(describeComputeThreads("--num-threads") == "1 compute thread (--num-threads)");
  setComputeThreads(2);
  CHECK(describeComputeThreads("OMP_NUM_THREADS") ==
        "2 compute threads, idle ones spinning (OMP_WAIT_POLICY=ACTIVE) (OMP_NUM_THREADS)");
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  CHECK(describeComputeThreads("x") ==
        "2 compute threads, idle ones sleeping (OMP_WAIT_POLICY=PASSIVE) (x)");
  ::setenv("GOMP_SPINCOUNT", "1000", 1); // libgomp lets it override the policy
  CHECK(describeComputeThreads("x") ==
        "2 compute threads, idle ones spinning up to GOMP_SPINCOUNT=1000 (x)");
  ::unsetenv("GOMP_SPINCOUNT");
  ::unsetenv("OMP_WAIT_POLICY");
  CHECK(describeComputeThreads("x") ==
        "2 compute threads, idle ones spinning a while, then sleeping (libgomp's default) (x)");
  if (!policy.empty())
    ::setenv("OMP_WAIT_POLICY", policy.c_str(), 1);
  setComputeThreads(before);
}
