// The feeds' parse speed: one trainer reads every batch of a file through its feed (criteo, or
// csv / tsv / slot with a schema naming Criteo's 40 columns), as training would, and reports
// rows/s and the process's peak resident memory after the read. bench/feeds.sh writes the same
// rows in each format and prints each reader's rows/s over the criteo reader's.
//
// Usage: bench_feeds FORMAT FILE [--batch-size N]
#include <chrono>
#include <sys/resource.h>

#include "api/recipes.h"
#include "feed/batch_source.h"
#include "feed/schema.h"
#include "support/error.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::opt<std::string> feedFormat(cl::Positional, cl::Required, cl::desc("<format>"));
static cl::opt<std::string> file(cl::Positional, cl::Required, cl::desc("<file>"));
static cl::opt<int64_t> batchSize("batch-size", cl::init(1000), cl::desc("rows a batch"));

static ExitOnError exitOnErr("bench_feeds: error: ");

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "bench_feeds: a feed's rows/s\n");
  oar::RecipeSpec s;
  s.model = "wide_deep";
  s.format = feedFormat;
  s.data = {file};
  s.batchSize = batchSize;
  s.hidden = {8};
  s.vocab = 1024;
  if (feedFormat != "criteo") { // Criteo's columns by name, transformed as the criteo feed does
    std::string dense, sparse;
    for (int i = 1; i <= 13; ++i)
      dense += formatv("{0}I{1}:log1p", i > 1 ? "," : "", i).str();
    for (int i = 1; i <= 26; ++i)
      sparse += formatv("{0}C{1}", i > 1 ? "," : "", i).str();
    s.schema = exitOnErr(oar::schemaFromFlags("label", dense, sparse));
  }
  oar::ModelBuilder m = exitOnErr(oar::buildRecipe(s));
  auto source = exitOnErr(oar::openBatchSource(m.main().train_feed(), m.main().blocks(0)));
  std::vector<oar::Tensor> batch;
  int64_t epoch, rows = 0;
  auto start = std::chrono::steady_clock::now();
  while (exitOnErr(source->next(batch, epoch)))
    rows += batch[0].dim(0);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  outs() << formatv("{0,-7} {1,10} rows in {2:f2} s: {3,10:f0} rows/s, peak resident {4} MB\n",
                    feedFormat, rows, secs, rows / secs, usage.ru_maxrss / 1024);
  return 0;
}
