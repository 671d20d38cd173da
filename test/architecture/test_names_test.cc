// ctest runs each test case by name (catch_discover_tests): a name with a square bracket ends
// CMake's list of names there, silently dropping every test discovered after it; a semicolon
// cuts the name in two, and neither part matched a test (8 cases never ran under ctest); and a
// name starting with '-' is read by Catch as an option. All happened once.
#include "test/helpers/expect.h"

TEST_CASE("every test's name survives ctest's discovery", "[architecture]") {
  const auto &tests = Catch::getRegistryHub().getTestCaseRegistry().getAllTests();
  REQUIRE(tests.size() > 300);
  for (const Catch::TestCase &t : tests) {
    INFO("test case \"" << t.name << "\"");
    CHECK(t.name.find_first_of("[];") == std::string::npos);
    CHECK(t.name.front() != '-');
  }
}
