// oar-predict: scores for every row of data files, from an export, one line per row in order.
#include "feed/feed_overrides.h"
#include "serving/predict_stream.h"
#include "support/error.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-predict options");
static cl::opt<std::string> exportDir(cl::Positional, cl::Required,
                                      cl::desc("<export dir written by oar-export>"),
                                      cl::cat(category));
static cl::opt<std::string> data("data", cl::desc("the rows to score: files, comma separated"),
                                 cl::Required, cl::cat(category));
static cl::opt<std::string>
    dataFormat("format", cl::desc("their format (default: the format the model was trained on)"),
               cl::cat(category));
static cl::opt<std::string> out("o", cl::desc("the scores file (default: standard output)"),
                                cl::value_desc("FILE"), cl::init("-"), cl::cat(category));
static cl::opt<int>
    threads("num-threads",
            cl::desc("threads predicting batches at once, one compute thread each (default 1)"),
            cl::init(1), cl::cat(category));
static cl::opt<bool>
    bf16("bf16",
         cl::desc("run the model's fully connected layers in bfloat16: faster where the CPU has "
                  "AMX or AVX-512 BF16, scores off by about 1e-3"),
         cl::init(false), cl::cat(category));
static cl::opt<bool> noSparseInputs(
    "no-sparse-inputs",
    cl::desc("run every layer as a GEMM, for the training job's scores to the bit (by default a "
             "layer fed by a relu sums only its input's nonzeros: faster, scores within f32 "
             "rounding: about 1e-7)"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t> batchSize("batch-size",
                                  cl::desc("rows per batch (default: the model's feed's)"),
                                  cl::init(0), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-predict");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-predict",
                      "oar-predict: write a line of scores per input row, in order\n");
  ExitOnError exitOnErr("oar-predict: error: ");
  oar::PredictorOptions options;
  options.bf16Layers = bf16;
  options.sparseInputs = !noSparseInputs;
  auto predictor = exitOnErr(oar::Predictor::load(exportDir, options));
  oar::proto::DataFeed feed = predictor->program().test_feed();
  if (feed.columns_size() == 0)
    exitOnErr(oar::makeError("{0}: the export has no data feed to read rows by", exportDir));
  feed.clear_files();
  for (StringRef f : oar::splitFileList(data))
    feed.add_files(f.str());
  if (!dataFormat.empty())
    feed.set_format(dataFormat);
  if (batchSize > 0)
    feed.set_batch_size(batchSize);
  feed.set_limit(0);
  std::error_code ec;
  raw_fd_ostream os(out, ec);
  if (ec)
    exitOnErr(oar::makeError("{0}: cannot write: {1}", out, ec.message()));
  int64_t rows = exitOnErr(oar::predictFeed(*predictor, feed, os, threads));
  os.close();
  if (os.has_error())
    exitOnErr(oar::makeError("{0}: write failed: {1}", out, os.error().message()));
  errs() << "oar-predict: scored " << rows << " rows" << (out == "-" ? "" : " into " + out) << "\n";
  return 0;
}
