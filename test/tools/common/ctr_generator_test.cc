// oar-gen-ctr's generator: Criteo's line format, determinism, click rate, Zipf values and the
// teacher's AUC; and the sorted-score AUC it reports.
#include <map>
#include <random>

#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"
#include "llvm/ADT/StringExtras.h"

using namespace oar;
using Catch::Matchers::Contains;

/// The lines of `text`, which must outlive them.
static std::vector<llvm::StringRef> linesOf(const std::string &text) {
  llvm::SmallVector<llvm::StringRef, 0> lines;
  llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  return {lines.begin(), lines.end()};
}

TEST_CASE("sortedScoreAuc counts ordered pairs, ties half", "[executor][ctr]") {
  std::mt19937_64 gen(11);
  std::vector<double> scores;
  std::vector<uint8_t> labels;
  for (int i = 0; i < 300; ++i) {
    scores.push_back(static_cast<double>(gen() % 20)); // many ties
    labels.push_back(gen() % 3 == 0);
  }
  double pairs = 0, right = 0;
  for (size_t i = 0; i < scores.size(); ++i)
    for (size_t j = 0; j < scores.size(); ++j)
      if (labels[i] && !labels[j]) {
        pairs += 1;
        right += scores[i] > scores[j] ? 1.0 : scores[i] == scores[j] ? 0.5 : 0.0;
      }
  CHECK(sortedScoreAuc(scores, labels) == Approx(right / pairs).epsilon(1e-12));
  CHECK(sortedScoreAuc({0.1, 0.9}, {0, 1}) == 1.0);
  CHECK(sortedScoreAuc({0.1, 0.9}, {1, 1}) == 0.0); // no negatives
}

TEST_CASE("oar-gen-ctr's lines are Criteo's: 40 fields, hex categories, seeded",
          "[executor][ctr]") {
  std::string dir = scratchDir("gen_ctr");
  CtrGenOptions opts;
  opts.trainLines = 3000;
  opts.testLines = 2000;
  opts.slots = 20;
  opts.seed = 7;
  CtrGenSummary sum = requireValue(generateCtr(opts, dir + "/a"));
  std::string train = readFile(dir + "/a/train.txt"), test = readFile(dir + "/a/test.txt");
  auto lines = linesOf(train);
  REQUIRE(lines.size() == 3000);
  int64_t positives = 0;
  for (llvm::StringRef line : lines) {
    llvm::SmallVector<llvm::StringRef, 40> f;
    line.split(f, '\t');
    REQUIRE(f.size() == 40);
    REQUIRE((f[0] == "0" || f[0] == "1"));
    positives += f[0] == "1";
    for (int j = 1; j <= 13; ++j) {
      uint64_t v;
      CHECK((f[j].empty() || !f[j].getAsInteger(10, v)));
    }
    for (int s = 0; s < 26; ++s) {
      llvm::StringRef c = f[14 + s];
      CHECK((c.empty() || (c.size() == 8 && llvm::all_of(c, [](char ch) {
                             return llvm::isDigit(ch) || (ch >= 'a' && ch <= 'f');
                           }))));
      if (s >= opts.slots)
        CHECK(c.empty()); // only --slots slots carry values
    }
  }
  CHECK(positives == sum.trainPositives);
  CHECK(linesOf(test).size() == 2000);

  // The same options give the same bytes; another seed gives other lines.
  REQUIRE_OK(generateCtr(opts, dir + "/b").takeError());
  CHECK(readFile(dir + "/b/train.txt") == train);
  CHECK(readFile(dir + "/b/test.prob") == readFile(dir + "/a/test.prob"));
  opts.seed = 8;
  REQUIRE_OK(generateCtr(opts, dir + "/c").takeError());
  CHECK(readFile(dir + "/c/train.txt") != train);
  // The test file does not depend on how many training lines there are.
  opts.seed = 7;
  opts.trainLines = 10;
  REQUIRE_OK(generateCtr(opts, dir + "/d").takeError());
  CHECK(readFile(dir + "/d/test.txt") == test);
}

TEST_CASE("oar-gen-ctr plants about 25% clicks, Zipf values and reports the teacher's AUC",
          "[executor][ctr]") {
  std::string dir = scratchDir("gen_ctr_teacher");
  CtrGenOptions opts;
  opts.trainLines = 20000;
  opts.testLines = 20000;
  CtrGenSummary sum = requireValue(generateCtr(opts, dir));
  CHECK(sum.trainPositives / 20000.0 == Approx(0.25).margin(0.02));
  CHECK(sum.testPositives / 20000.0 == Approx(0.25).margin(0.02));
  CHECK(sum.teacherAuc > 0.7);
  CHECK(sum.teacherAuc < 0.9);

  // test.prob holds each test line's probability; scored against the labels it gives the AUC.
  std::string probText = readFile(dir + "/test.prob"), testText = readFile(dir + "/test.txt");
  auto probLines = linesOf(probText), testLines = linesOf(testText);
  REQUIRE(probLines.size() == testLines.size());
  std::vector<double> probs;
  std::vector<uint8_t> labels;
  std::map<std::string, int64_t> c3; // slot 3, 10^6 values
  for (size_t i = 0; i < probLines.size(); ++i) {
    double p;
    REQUIRE(!probLines[i].getAsDouble(p));
    probs.push_back(p);
    labels.push_back(testLines[i].front() == '1');
    llvm::SmallVector<llvm::StringRef, 40> f;
    testLines[i].split(f, '\t');
    if (!f[16].empty())
      ++c3[f[16].str()];
  }
  CHECK(sortedScoreAuc(probs, labels) == Approx(sum.teacherAuc).margin(1e-6));
  // Zipf with exponent 1.1: the top value is about 2^1.1 = 2.14 times as frequent as the next.
  std::vector<int64_t> counts;
  for (auto &[value, n] : c3)
    counts.push_back(n);
  std::sort(counts.rbegin(), counts.rend());
  REQUIRE(counts.size() > 100);
  CHECK(static_cast<double>(counts[0]) / counts[1] == Approx(2.14).margin(0.4));
  CHECK(static_cast<double>(counts[0]) / counts[9] == Approx(std::pow(10.0, 1.1)).epsilon(0.3));
}

TEST_CASE("oar-gen-ctr refuses options it cannot honour", "[executor][ctr]") {
  CtrGenOptions opts;
  opts.slots = 27;
  CHECK_THAT(errorText(generateCtr(opts, scratchDir("gen_ctr_bad"))),
             Contains("--slots=27") && Contains("1 to 26"));
  opts.slots = 26;
  opts.zipf = 0;
  CHECK_THAT(errorText(generateCtr(opts, scratchDir("gen_ctr_bad"))), Contains("--zipf=0"));
}
