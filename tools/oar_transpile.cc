// oar-transpile: rewrites a single-machine program for N trainers and M pservers.
#include "ops/verify.h"
#include "support/error.h"
#include "support/option_table.h"
#include "tools/common/option_flags.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {

/// The tool's own settings, beside the plan's (DistributeConfig declares those).
struct TranspileFlags {
  std::string mainPath, startupPath, pservers, outDir;
  bool text = false, quiet = false;

  void declare(oar::OptionTable &t, oar::DistributeConfig &config) {
    t.group("oar-transpile options");
    t.add("main", mainPath, "FILE", "single-machine main program (required)");
    t.add("startup", startupPath, "FILE", "its startup program (required)");
    t.add("trainers", config.trainers, "number of trainers", 1);
    t.add("trainer-id", config.trainerId,
          "this trainer's id (checked; the id is given at run time)");
    t.add("pservers", pservers, "HOST:PORT,...", "pserver endpoints (required)");
    t.add("o", outDir, "DIR", "output directory (required)");
    t.add("text", text, "also write .pbtxt files");
    t.add("quiet", quiet, "do not print the plan");
    config.declare(t);
  }
};

} // namespace

int main(int argc, char **argv) {
  oar::setToolVersion("oar-transpile");
  ExitOnError exitOnErr("oar-transpile: error: ");
  oar::DistributeConfig config;
  TranspileFlags f;
  oar::OptionTable table;
  f.declare(table, config);
  oar::OptionFlags flags(table);
  cl::HideUnrelatedOptions(flags.categories());
  oar::parseToolFlags(argc, argv, "oar-transpile",
                      "oar-transpile: write trainer and pserver programs\n");
  exitOnErr(flags.apply());
  for (auto [value, name] : {std::pair{&f.mainPath, "--main"},
                             {&f.startupPath, "--startup"},
                             {&f.pservers, "--pservers"},
                             {&f.outDir, "-o"}})
    if (value->empty())
      exitOnErr(oar::makeError("{0} is required (see --help)", name));
  config.pservers = oar::splitEndpoints(f.pservers);
  exitOnErr(config.validate());
  auto mainProg = exitOnErr(oar::loadVerifiedProgram(f.mainPath));
  auto startupProg = exitOnErr(oar::loadVerifiedProgram(f.startupPath));
  auto result = exitOnErr(oar::transpile(mainProg, startupProg, config));
  exitOnErr(oar::writeTranspiled(result, f.outDir, f.text,
                                 "written by oar-transpile from " + f.mainPath));
  if (!f.quiet)
    outs() << result.plan.text();
  outs() << "wrote " << f.outDir << ": trainer.pb, trainer.startup.pb, " << config.pservers.size()
         << " pserver programs and plan.txt\n";
  return 0;
}
