// oar-launch: a local distributed job in one command.
#include "executor/device.h"
#include "executor/threads.h"
#include "runtime/cluster/launcher.h"
#include "support/error.h"
#include "support/option_table.h"
#include "support/signals.h"
#include "tools/common/option_flags.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "transpiler/config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::OptionCategory category("oar-launch options");
static cl::opt<int> serverNum("server-num", cl::desc("number of pservers (collective: none)"),
                              cl::init(2), cl::cat(category));
static cl::opt<int> workerNum("worker-num", cl::desc("number of trainers"), cl::init(2),
                              cl::cat(category));
// Paddle's fleetrun spells these with underscores; oar tools use hyphens everywhere.
static cl::alias serverNumAlias("server_num", cl::aliasopt(serverNum), cl::Hidden,
                                cl::cat(category));
static cl::alias workerNumAlias("worker_num", cl::aliasopt(workerNum), cl::Hidden,
                                cl::cat(category));
static cl::opt<std::string>
    loadDir("load", cl::desc("pservers (collective: trainer 0) start from DIR"), cl::cat(category));
static cl::opt<int64_t> loadStep("step",
                                 cl::desc("with --load of a checkpoint directory: the step to start "
                                          "from (default: the newest complete on every pserver)"),
                                 cl::cat(category));
static cl::opt<std::string>
    saveDir("save", cl::desc("trainer 0 saves params, pservers their blocks, under DIR"),
            cl::cat(category));
static cl::opt<int64_t> timeoutSec("timeout", cl::desc("stop everything after N seconds (0: none)"),
                                   cl::init(0), cl::cat(category));
static cl::opt<int> serverThreads(
    "server-threads",
    cl::desc("threads per pserver: its service threads, each owning optimize blocks (default: "
             "OMP_NUM_THREADS if set, else 1)"),
    cl::init(0), cl::cat(category));
static cl::opt<int>
    workerThreads("worker-threads",
                  cl::desc("compute threads per trainer (default: OMP_NUM_THREADS if set, else the "
                           "cores split among them)"),
                  cl::init(0), cl::cat(category));
static cl::opt<bool> curve("curve",
                           cl::desc("authenticate and encrypt with CURVE keys made for this launch "
                                    "(default; --curve=false: plain TCP on 127.0.0.1)"),
                           cl::init(true), cl::cat(category));
static cl::opt<bool>
    scheduler("scheduler",
              cl::desc("start a scheduler too: nodes register there and pservers pick their own "
                       "ports, as in a cluster (MindSpore, ps-lite)"),
              cl::cat(category));
static cl::opt<std::string> device(
    "device",
    cl::desc("cuda: trainer i runs on GPU i mod the GPUs visible (pservers stay on the CPU)"),
    cl::cat(category));
static cl::opt<std::string> executor("executor",
                                     cl::desc("path of oar-executor (default: beside oar-launch)"),
                                     cl::cat(category));
static cl::OptionCategory dataCategory("data (overrides the program's feed on every trainer)");
static cl::opt<std::string> data("data", cl::desc("train data files, comma separated"),
                                 cl::cat(dataCategory));
static cl::opt<std::string> testData("test-data", cl::desc("test data files, comma separated"),
                                     cl::cat(dataCategory));
static cl::opt<std::string> epochs("epochs", cl::desc("passes over the train data"),
                                   cl::cat(dataCategory));
static cl::opt<std::string> batchSize("batch-size", cl::desc("rows per step, per trainer"),
                                      cl::cat(dataCategory));
static cl::opt<std::string>
    metrics("metrics", cl::desc("each trainer writes FILE with .traineri before the extension"),
            cl::cat(dataCategory));
static cl::opt<std::string> learningRate("lr", cl::desc("every node's base learning rate"),
                                         cl::cat(category));
static cl::opt<std::string> keepBest("keep-best",
                                     cl::desc("auc | loss: trainer 0 keeps the best evaluation's "
                                              "params in SAVE/best (every mode)"),
                                     cl::cat(category));
static cl::opt<std::string> earlyStop("early-stop",
                                      cl::desc("stop after N evaluations without improvement "
                                               "(every mode: trainer 0 decides)"),
                                      cl::cat(category));
static cl::opt<std::string> evalEvery("eval-every",
                                      cl::desc("trainer 0 evaluates every N steps or `epoch`"),
                                      cl::cat(dataCategory));
static cl::opt<std::string> interpreter(
    "script-interpreter",
    cl::desc("every node runs SCRIPT with this interpreter instead of oar-executor, its flags in "
             "OAR_NODE_FLAGS (python3 -m oar.launch sets it; oar.fleet reads them): the "
             "positional is the script, what follows it the script's arguments"),
    cl::value_desc("PATH"), cl::cat(category));
static cl::opt<std::string> modelDir(cl::Positional,
                                     cl::desc("MODEL_DIR (main.pb, startup.pb); SCRIPT with "
                                              "--script-interpreter"),
                                     cl::Required, cl::cat(category));
static cl::list<std::string> nodeArgs(cl::ConsumeAfter,
                                      cl::desc("-- <oar-executor flags for every node>"));

/// The trainers' device: --device=cuda takes the GPUs visible, one trainer per GPU in turn.
static Error setTrainerDevice(oar::runtime::LaunchOptions &opts) {
  if (device.empty())
    return Error::success();
  if (device != "cuda" && device != "cpu")
    return oar::makeError("--device={0} must be cuda or cpu (one trainer per GPU in turn)",
                          device.getValue());
  if (device == "cuda") {
    if (Error err = oar::loadDeviceKernels(oar::Device::Cuda))
      return oar::makeError("--device=cuda: {0}", toString(std::move(err)));
    opts.gpuCount = oar::deviceMemory(oar::Device::Cuda)->count();
    if (opts.gpuCount == 0)
      return oar::makeError("--device=cuda: no GPU is visible (no driver, or CUDA_VISIBLE_DEVICES "
                            "hides them)");
  }
  opts.trainerDevice = device;
  return Error::success();
}

/// The launch the flags describe; `modes` holds --mode's.
static Expected<oar::runtime::LaunchOptions> launchOptions(const oar::DistributeConfig &modes,
                                                           const char *argv0) {
  oar::runtime::LaunchOptions opts;
  opts.servers = serverNum, opts.workers = workerNum, opts.mode = modes.mode;
  opts.hybrid = modes.hybrid;
  // A collective job has no pservers: the default count is 0 there, a count given is refused.
  if (opts.mode == oar::Mode::Collective && !serverNum.getNumOccurrences())
    opts.servers = 0;
  opts.modelDir = modelDir, opts.loadDir = loadDir, opts.saveDir = saveDir;
  if (loadStep.getNumOccurrences()) {
    if (loadDir.empty())
      return oar::makeError("--step {0} picks a checkpoint step of --load DIR: give --load",
                            loadStep);
    opts.loadStep = loadStep;
  }
  opts.timeoutSec = timeoutSec;
  opts.curve = curve;
  opts.scheduler = scheduler;
  if (serverThreads < 0 || workerThreads < 0 || serverThreads > oar::kMaxComputeThreads ||
      workerThreads > oar::kMaxComputeThreads)
    return oar::makeError("--server-threads and --worker-threads must be from 0 (the default) to "
                          "{0}, not {1} and {2}",
                          oar::kMaxComputeThreads, serverThreads.getValue(),
                          workerThreads.getValue());
  opts.pserverThreads = serverThreads, opts.trainerThreads = workerThreads;
  if (Error err = setTrainerDevice(opts))
    return std::move(err);
  if (!interpreter.empty()) { // what follows the script is its own
    opts.script = {interpreter, modelDir};
    opts.script.insert(opts.script.end(), nodeArgs.begin(), nodeArgs.end());
  } else {
    opts.extraArgs.assign(nodeArgs.begin(), nodeArgs.end());
    if (!opts.extraArgs.empty() && opts.extraArgs.front() == "--")
      opts.extraArgs.erase(opts.extraArgs.begin());
  }
  // Passed on to every node; oar-executor checks the values.
  for (cl::opt<std::string> *flag : {&data, &testData, &epochs, &batchSize, &metrics, &evalEvery,
                                     &learningRate, &keepBest, &earlyStop})
    if (flag->getNumOccurrences())
      opts.extraArgs.push_back(("--" + flag->ArgStr + "=" + flag->getValue()).str());
  if (executor.empty()) {
    std::string self = sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&launchOptions));
    SmallString<256> path(sys::path::parent_path(self));
    sys::path::append(path, "oar-executor");
    opts.executor = std::string(path);
  } else {
    opts.executor = executor;
  }
  opts.shouldStop = oar::runtime::stopRequested;
  opts.print = [](const std::string &line) {
    outs() << line << "\n";
    outs().flush();
  };
  return opts;
}

int main(int argc, char **argv) {
  oar::setToolVersion("oar-launch");
  ExitOnError exitOnErr("oar-launch: error: ");
  // --mode and --hybrid-tables as every tool declares them; refused once here, not once per node.
  oar::DistributeConfig modes;
  oar::OptionTable modeTable;
  modeTable.group("the job's mode");
  modes.declareMode(modeTable);
  oar::OptionFlags modeFlags(modeTable);
  std::vector<const cl::OptionCategory *> shown = modeFlags.categories();
  shown.insert(shown.begin(), {&category, &dataCategory});
  cl::HideUnrelatedOptions(shown);
  oar::parseToolFlags(argc, argv, "oar-launch",
                      "oar-launch: run pservers and trainers on 127.0.0.1\n");
  exitOnErr(oar::runtime::installStopHandlers());
  exitOnErr(modeFlags.apply());
  oar::runtime::LaunchOptions opts = exitOnErr(launchOptions(modes, argv[0]));
  exitOnErr(oar::runtime::launch(opts));
  outs() << "oar-launch: all " << opts.servers + opts.workers << " nodes "
         << (scheduler ? "and the scheduler " : "") << "finished\n";
  return 0;
}
