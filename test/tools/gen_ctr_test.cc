// oar-gen-ctr: writes the three files, prints the teacher's AUC, and refuses bad flags in one line.
#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"
#include "llvm/Support/FormatVariadic.h"

using Catch::Matchers::Contains;

TEST_CASE("oar-gen-ctr writes train, test and probabilities and prints the teacher's AUC",
          "[tools][ctr]") {
  std::string dir = scratchDir("gen_ctr_tool"), out;
  int rc = runCommand(binDir() + "/oar-gen-ctr --train-lines=500 --test-lines=400 --seed=5 -o " +
                          dir + "/data",
                      out);
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Contains("500 lines") && Contains("400 lines"));
  oar::CtrGenOptions opts;
  opts.trainLines = 500;
  opts.testLines = 400;
  opts.seed = 5;
  oar::CtrGenSummary sum = requireValue(oar::generateCtr(opts, dir + "/lib"));
  CHECK_THAT(out,
             Contains(llvm::formatv("teacher AUC on the test file: {0:f4}", sum.teacherAuc).str()));
  for (const char *f : {"/train.txt", "/test.txt", "/test.prob"})
    CHECK(readFile(dir + "/data" + f) == readFile(dir + "/lib" + f));
}

TEST_CASE("oar-gen-ctr refuses a bad flag with one line", "[tools][ctr]") {
  std::string out;
  int rc =
      runCommand(binDir() + "/oar-gen-ctr --slots=30 -o " + scratchDir("gen_ctr_tool_bad"), out);
  CHECK(rc == 1);
  CHECK(llvm::StringRef(out).rtrim().count('\n') == 0);
  CHECK_THAT(out, Contains("oar-gen-ctr: error: --slots=30; Criteo lines have 1 to 26"));
}
