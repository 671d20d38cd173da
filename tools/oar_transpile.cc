// oar-transpile: rewrites a single-machine program for N trainers and M pservers.
#include "ops/verify.h"
#include "tools/common/bucket_flags.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-transpile options");
static cl::opt<std::string> mainPath("main", cl::desc("single-machine main program"), cl::Required,
                                     cl::cat(category));
static cl::opt<std::string> startupPath("startup", cl::desc("its startup program"), cl::Required,
                                        cl::cat(category));
static cl::opt<int64_t> trainers("trainers", cl::desc("number of trainers"), cl::init(1),
                                 cl::cat(category));
static cl::opt<int64_t>
    trainerId("trainer_id", cl::desc("this trainer's id (checked; the id is given at run time)"),
              cl::init(0), cl::cat(category));
static cl::opt<std::string> pservers("pservers", cl::desc("pserver endpoints host:port,..."),
                                     cl::Required, cl::cat(category));
static cl::opt<std::string> mode("mode", cl::desc("sync | async | geo | collective | hybrid"),
                                 cl::init("sync"), cl::cat(category));
static cl::opt<std::string>
    hybridTables("hybrid-tables",
                 cl::desc("--mode hybrid: the tables train sync (the default) or async"),
                 cl::cat(category));
static oar::BucketFlags buckets(category);
static cl::opt<int64_t> geoKSteps("geo-k-steps", cl::desc("GEO: steps between syncs"),
                                  cl::init(100), cl::cat(category));
static cl::opt<bool> sliceVarUp("slice-var-up", cl::desc("cut big params into blocks"),
                                cl::init(true), cl::cat(category));
static cl::opt<int64_t> minBlockSize("min-block-size", cl::desc("smallest block, in elements"),
                                     cl::init(8192), cl::cat(category));
static cl::opt<std::string> splitMethod("split-method", cl::desc("round_robin | hash_name"),
                                        cl::init("round_robin"), cl::cat(category));
static cl::opt<std::string> outDir("o", cl::desc("output directory"), cl::Required,
                                   cl::cat(category));
static cl::opt<bool> text("text", cl::desc("also write .pbtxt files"), cl::cat(category));
// Paddle spells these with underscores; oar tools use hyphens everywhere.
static cl::alias geoKStepsAlias("geo_k_steps", cl::aliasopt(geoKSteps), cl::Hidden,
                                cl::cat(category));
static cl::alias sliceVarUpAlias("slice_var_up", cl::aliasopt(sliceVarUp), cl::Hidden,
                                 cl::cat(category));
static cl::alias minBlockSizeAlias("min_block_size", cl::aliasopt(minBlockSize), cl::Hidden,
                                   cl::cat(category));
static cl::alias splitMethodAlias("split_method", cl::aliasopt(splitMethod), cl::Hidden,
                                  cl::cat(category));
static cl::opt<bool> quiet("quiet", cl::desc("do not print the plan"), cl::cat(category));

int main(int argc, char **argv) {
  oar::setToolVersion("oar-transpile");
  cl::HideUnrelatedOptions(category);
  oar::parseToolFlags(argc, argv, "oar-transpile",
                      "oar-transpile: write trainer and pserver programs\n");
  ExitOnError exitOnErr("oar-transpile: error: ");
  oar::DistributeConfig config;
  config.trainers = trainers, config.trainerId = trainerId;
  exitOnErr(oar::setModeFromFlags(config, mode, hybridTables));
  config.pservers = oar::splitEndpoints(pservers), config.geoKSteps = geoKSteps;
  config.sliceVarUp = sliceVarUp, config.minBlockSize = minBlockSize,
  config.splitMethod = splitMethod;
  exitOnErr(buckets.apply(config));
  exitOnErr(config.validate());
  auto mainProg = exitOnErr(oar::loadVerifiedProgram(mainPath));
  auto startupProg = exitOnErr(oar::loadVerifiedProgram(startupPath));
  auto result = exitOnErr(oar::transpile(mainProg, startupProg, config));
  exitOnErr(
      oar::writeTranspiled(result, outDir, text, "written by oar-transpile from " + mainPath));
  if (!quiet)
    outs() << result.plan.text();
  outs() << "wrote " << outDir << ": trainer.pb, trainer.startup.pb, " << config.pservers.size()
         << " pserver programs and plan.txt\n";
  return 0;
}
