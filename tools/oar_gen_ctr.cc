// oar-gen-ctr: Criteo-format click logs from a planted model, with the best AUC any model can
// reach.
#include <chrono>

#include "tools/common/ctr_generator.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-gen-ctr options");
static cl::opt<int64_t> trainLines("train-lines", cl::desc("lines in train.txt"), cl::init(1000000),
                                   cl::cat(category));
static cl::opt<int64_t> testLines("test-lines", cl::desc("lines in test.txt and test.prob"),
                                  cl::init(100000), cl::cat(category));
static cl::opt<int64_t> slots("slots",
                              cl::desc("categorical slots with values, 1..26 (the rest "
                                       "are left empty)"),
                              cl::init(26), cl::cat(category));
static cl::opt<uint64_t> seed("seed", cl::desc("seed of the teacher and the lines"), cl::init(1),
                              cl::cat(category));
static cl::opt<double> zipf("zipf", cl::desc("Zipf exponent of each slot's values"), cl::init(1.1),
                            cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("directory for train.txt, test.txt, test.prob"),
                                   cl::value_desc("dir"), cl::Required, cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-gen-ctr");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-gen-ctr",
                      "oar-gen-ctr: write Criteo-format click logs from a planted model\n");
  ExitOnError exitOnErr("oar-gen-ctr: error: ");
  oar::CtrGenOptions opts;
  opts.trainLines = trainLines;
  opts.testLines = testLines;
  opts.slots = slots;
  opts.seed = seed;
  opts.zipf = zipf;
  auto start = std::chrono::steady_clock::now();
  oar::CtrGenSummary sum = exitOnErr(oar::generateCtr(opts, outDir));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto pct = [](int64_t k, int64_t n) { return n ? 100.0 * k / n : 0.0; };
  outs() << formatv("wrote {0}/train.txt ({1} lines, {2:f1}% clicks), {0}/test.txt ({3} lines, "
                    "{4:f1}% clicks) and {0}/test.prob in {5:f1} s\n",
                    outDir, opts.trainLines, pct(sum.trainPositives, opts.trainLines),
                    opts.testLines, pct(sum.testPositives, opts.testLines), secs);
  outs() << formatv("teacher AUC on the test file: {0:f4}\n", sum.teacherAuc);
  return 0;
}
