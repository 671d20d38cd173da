// A test that cannot run here (no GPU, no root, no mpirun) reports a skip, never a pass.
#pragma once

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

namespace oar::test {

/// The exit status ctest counts as a skip (SKIP_RETURN_CODE in test/CMakeLists.txt).
inline constexpr int kSkipExitCode = 77;

/// Under ctest, which runs one test case a process and sets OAR_TEST_SKIP_EXITS=1, prints `why`
/// and ends the process with kSkipExitCode, so ctest's summary lists the test as skipped. Run by
/// hand (many cases in one process) it returns, and the caller warns and returns.
void exitIfSkipsExit(const std::string &why);

} // namespace oar::test

/// Ends the current test case as skipped, saying why (a stream expression, as in WARN).
#define OAR_SKIP(why)                                                                              \
  do {                                                                                             \
    std::ostringstream oarSkipWhy_;                                                                \
    oarSkipWhy_ << why;                                                                            \
    oar::test::exitIfSkipsExit(oarSkipWhy_.str());                                                 \
    WARN("skipped: " << oarSkipWhy_.str());                                                        \
    return;                                                                                        \
  } while (0)
