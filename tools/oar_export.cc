// oar-export: a trained model made self-contained for serving, from a checkpoint of any layout.
#include "checkpoint/checkpoint_reader.h"
#include "ops/verify.h"
#include "serving/export.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-export options");
static cl::opt<std::string> modelDir(cl::Positional, cl::Required,
                                     cl::desc("<model dir: main.pb and startup.pb>"),
                                     cl::cat(category));
static cl::opt<std::string>
    load("load",
         cl::desc("the trained values: a save (one machine or a distributed job), a checkpoint "
                  "directory (one machine's, or a job's pservers'), or an export"),
         cl::value_desc("DIR"), cl::Required, cl::cat(category));
static cl::opt<int64_t> step("step",
                            cl::desc("with a checkpoint directory: the step to export (default: "
                                     "the newest complete one)"),
                            cl::value_desc("N"), cl::cat(category));
static cl::opt<std::string> out("o", cl::desc("the export directory to write"),
                                cl::value_desc("DIR"), cl::Required, cl::cat(category));
static cl::list<std::string> output("output",
                                    cl::desc("a var to serve (default: the model's predictions)"),
                                    cl::value_desc("VAR"), cl::cat(category));
static cl::opt<int64_t>
    minPushes("min-pushes",
              cl::desc("drop table rows pushed fewer than N times (they read their initial "
                       "weights)"),
              cl::value_desc("N"), cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    maxUnseen("max-unseen-steps",
              cl::desc("drop table rows no push touched in the last K steps of training"),
              cl::value_desc("K"), cl::init(0), cl::cat(category));
static cl::opt<bool> f16("f16", cl::desc("write table values as float16"), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-export");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-export",
                      "oar-export: write a trained model for oar-predict and "
                      "oar::Predictor\n");
  ExitOnError exitOnErr("oar-export: error: ");
  oar::proto::Program main = exitOnErr(oar::loadVerifiedProgram(modelDir + "/main.pb"));
  oar::proto::Program startup = exitOnErr(oar::loadVerifiedProgram(modelDir + "/startup.pb"));
  oar::CheckpointReader ckpt = exitOnErr(oar::CheckpointReader::open(
      load, step.getNumOccurrences() ? std::optional<int64_t>(step) : std::nullopt));
  oar::ExportOptions opts;
  opts.outputs.assign(output.begin(), output.end());
  opts.minPushes = minPushes, opts.maxUnseenSteps = maxUnseen, opts.f16 = f16;
  oar::ExportedModel model = exitOnErr(oar::exportModel(main, startup, ckpt, opts));
  exitOnErr(oar::writeExport(model, out));
  outs() << "exported to " << out << "\n" << oar::describeExport(model);
  for (const auto &[name, t] : model.tables)
    if (t.dropped > 0)
      outs() << formatv("table {0}: dropped {1} rows (--min-pushes {2}, --max-unseen-steps {3})\n",
                        name, t.dropped, minPushes, maxUnseen);
  return 0;
}
