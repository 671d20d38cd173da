// oar-executor: trains one node. On a single machine: run startup, train over the program's
// data feed, evaluate on its test feed, save persistables.
#include "executor/npy.h"
#include "executor/progress.h"
#include "executor/trainer.h"
#include "ir/verify.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-executor options");
static cl::opt<std::string> mainPath("main", cl::desc("main program (.pb or .pbtxt)"), cl::Required, cl::cat(category));
static cl::opt<std::string> startupPath("startup", cl::desc("startup program"), cl::Required, cl::cat(category));
static cl::opt<std::string> loadDir("load", cl::desc("load persistables from DIR/<var>.npy"), cl::cat(category));
static cl::opt<std::string> saveDir("save", cl::desc("save persistables as DIR/<var>.npy"), cl::cat(category));
static cl::opt<std::string> metricsPath("metrics", cl::desc("write per-step metrics CSV"), cl::cat(category));
static cl::opt<int64_t> logEvery("log-every", cl::desc("print every N steps (0: about 20 lines)"), cl::init(0), cl::cat(category));

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "oar-executor: train a program on this node\n");
  ExitOnError exitOnErr("oar-executor: error: ");
  oar::proto::Program mainProg = exitOnErr(oar::loadProgram(mainPath));
  oar::proto::Program startupProg = exitOnErr(oar::loadProgram(startupPath));
  exitOnErr(oar::verifyProgram(mainProg, mainPath));
  exitOnErr(oar::verifyProgram(startupProg, startupPath));

  oar::Executor exec;
  oar::Scope scope;
  exitOnErr(exec.run(startupProg, scope));
  if (!loadDir.empty()) {
    auto loaded = exitOnErr(oar::loadPersistables(mainProg, scope, loadDir));
    outs() << "loaded " << loaded.size() << " vars from " << loadDir << "\n";
  }
  std::unique_ptr<oar::MetricsWriter> metrics;
  if (!metricsPath.empty())
    metrics = exitOnErr(oar::MetricsWriter::open(metricsPath));
  oar::ProgressPrinter progress(outs(), "", logEvery);
  oar::TrainOptions opts;
  opts.onStep = [&](const oar::StepReport &r) {
    progress.update(r);
    if (metrics)
      metrics->write(r);
  };
  auto reports = exitOnErr(oar::trainLoop(exec, mainProg, scope, opts));
  progress.finish();
  if (!reports.empty())
    outs() << formatv("trained {0} steps: first loss {1:f6}, last loss {2:f6}\n", reports.size(),
                      reports.front().loss, reports.back().loss);
  if (mainProg.has_test_feed() && mainProg.test_feed().columns_size() > 0) {
    auto eval = exitOnErr(oar::evaluate(exec, mainProg, scope, mainProg.test_feed()));
    outs() << formatv("test: {0} rows, loss {1:f6}", eval.rows, eval.loss);
    for (const auto &[name, value] : eval.metrics)
      outs() << formatv(", {0} {1:f4}", name, value);
    outs() << "\n";
  }
  if (!saveDir.empty()) {
    exitOnErr(oar::savePersistables(mainProg, scope, saveDir));
    outs() << "saved persistables to " << saveDir << "\n";
  }
  return 0;
}
