// The Catch2 test runner.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdlib>

// Tests choose threads themselves: the caller's OMP_NUM_THREADS must not reach the oar-launch and
// oar-executor processes they start (every node would honour it).
static const int kOmpNumThreadsUnset = unsetenv("OMP_NUM_THREADS");
