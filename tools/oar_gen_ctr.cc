// oar-gen-ctr: click logs from a planted model, with the best AUC any model can reach: Criteo's
// format, or (--layout=clicklog) a csv of string ids, categories, prices and recent categories.
#include <chrono>

#include "tools/common/click_log_generator.h"
#include "tools/common/ctr_generator.h"
#include "support/error.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-gen-ctr options");
static cl::opt<std::string>
    layout("layout",
           cl::desc("criteo (train.txt, test.txt) | clicklog (train.csv, test.csv: "
                    "clicked,user,item,cat,hour,device,price,recent; the test rows follow the "
                    "train rows in time)"),
           cl::init("criteo"), cl::cat(category));
static cl::opt<int64_t> trainLines("train-lines",
                                   cl::desc("lines in the train file (default: criteo 1000000, "
                                            "clicklog 500000)"),
                                   cl::init(1000000), cl::cat(category));
static cl::opt<int64_t> testLines("test-lines", cl::desc("lines in the test file and test.prob"),
                                  cl::init(100000), cl::cat(category));
static cl::opt<int64_t> users("users", cl::desc("clicklog: distinct users"), cl::init(400000),
                              cl::cat(category));
static cl::opt<int64_t> items("items", cl::desc("clicklog: distinct items"), cl::init(250000),
                              cl::cat(category));
static cl::opt<int64_t> categories("categories", cl::desc("clicklog: item categories"),
                                   cl::init(40), cl::cat(category));
static cl::opt<int64_t> days("days", cl::desc("clicklog: days the log spans"), cl::init(14),
                             cl::cat(category));
static cl::opt<int64_t> slots("slots",
                              cl::desc("categorical slots with values, 1..26 (the rest "
                                       "are left empty)"),
                              cl::init(26), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("seed of the teacher and the lines"), cl::init(1),
                              cl::cat(category));
static cl::opt<double> zipf("zipf",
                            cl::desc("Zipf exponent of each slot's values (default: criteo 1.1, "
                                     "clicklog 1.05)"),
                            cl::init(1.1), cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("directory for train.txt, test.txt, test.prob"),
                                   cl::value_desc("dir"), cl::Required, cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-gen-ctr");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-gen-ctr",
                      "oar-gen-ctr: write Criteo-format click logs from a planted model\n");
  ExitOnError exitOnErr("oar-gen-ctr: error: ");
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto pct = [](int64_t k, int64_t n) { return n ? 100.0 * k / n : 0.0; };
  if (layout == "clicklog") {
    oar::ClickLogOptions o;
    if (trainLines.getNumOccurrences())
      o.trainLines = trainLines;
    if (zipf.getNumOccurrences())
      o.zipf = zipf;
    o.testLines = testLines, o.users = users, o.items = items, o.categories = categories;
    o.days = days, o.seed = seed;
    oar::ClickLogSummary sum = exitOnErr(oar::generateClickLog(o, outDir));
    outs() << formatv("wrote {0}/train.csv ({1} lines, {2:f1}% clicks), {0}/test.csv ({3} "
                      "lines, {4:f1}% clicks) and {0}/test.prob in {5:f1} s\n",
                      outDir, o.trainLines, pct(sum.trainPositives, o.trainLines), o.testLines,
                      pct(sum.testPositives, o.testLines), seconds());
    outs() << formatv("teacher AUC on the test file: {0:f4}\n", sum.teacherAuc);
    return 0;
  }
  if (layout != "criteo")
    exitOnErr(oar::makeError("--layout={0}: use criteo or clicklog", layout));
  oar::CtrGenOptions opts;
  opts.trainLines = trainLines;
  opts.testLines = testLines;
  opts.slots = slots;
  opts.seed = seed;
  opts.zipf = zipf;
  oar::CtrGenSummary sum = exitOnErr(oar::generateCtr(opts, outDir));
  double secs = seconds();
  outs() << formatv("wrote {0}/train.txt ({1} lines, {2:f1}% clicks), {0}/test.txt ({3} lines, "
                    "{4:f1}% clicks) and {0}/test.prob in {5:f1} s\n",
                    outDir, opts.trainLines, pct(sum.trainPositives, opts.trainLines),
                    opts.testLines, pct(sum.testPositives, opts.testLines), secs);
  outs() << formatv("teacher AUC on the test file: {0:f4}\n", sum.teacherAuc);
  return 0;
}
