// Thread budgets set by hand: OMP_NUM_THREADS as a node reads it.
#include "executor/threads.h"
#include "test/support/expect.h"

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
