// The local launcher: a whole job as processes on this host.
#include "runtime/cluster/launcher.h"

#include <random>

#include "executor/threads.h"
#include "runtime/cluster/launched_nodes.h"
#include "runtime/security/curve.h"
#include "runtime/security/launch_keys.h"
#include "runtime/transport/held_port.h"
#include "support/env_names.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

/// Whether `args` (every node's flags) set --num-threads.
static bool setsNumThreads(llvm::ArrayRef<std::string> args) {
  return llvm::any_of(
      args, [](const std::string &a) { return llvm::StringRef(a).startswith("--num-threads"); });
}

std::optional<std::string> nodeThreadsFlag(llvm::ArrayRef<std::string> extraArgs, bool ompSet,
                                           int given, int share) {
  if (setsNumThreads(extraArgs) || (given <= 0 && ompSet))
    return std::nullopt;
  return "--num-threads=" + std::to_string(std::max(1, given > 0 ? given : share));
}

namespace {

/// Refuses a launch that cannot work before any node starts. Returns whether OMP_NUM_THREADS is
/// set (to a valid count).
llvm::Expected<bool> checkLaunch(const LaunchOptions &opts) {
  bool collective = opts.mode == Mode::Collective;
  if (collective && opts.servers != 0)
    return makeError("--mode collective runs no pservers (the trainers all-reduce their "
                     "gradients); drop --server-num={0}",
                     opts.servers);
  if (opts.hybrid && (opts.mode == Mode::Geo || opts.mode == Mode::Collective))
    return makeError("a hybrid job's tables train sync or async, not {0}", modeName(opts.mode));
  if ((collective || opts.hybrid) && opts.trainerDevice == "cuda")
    return makeError(
        "--device=cuda with collective or hybrid jobs is not built yet (GPU trainers need NCCL); "
        "collective trainers run on the CPU");
  if (collective && opts.workers < 1)
    return makeError("need at least one worker (got {0})", opts.workers);
  if (!collective && (opts.servers < 1 || opts.workers < 1))
    return makeError("need at least one server and one worker (got {0} and {1})", opts.servers,
                     opts.workers);
  // OMP_NUM_THREADS reaches every node, and a node reads it where it gets no --num-threads (none
  // in every node's flags, none given for its role): a bad one is refused before such a node
  // starts.
  bool ompSet = false;
  if (auto omp = ompNumThreads(std::getenv(env::kOmpNumThreads)); !omp) {
    if (!setsNumThreads(opts.extraArgs) && (opts.pserverThreads <= 0 || opts.trainerThreads <= 0))
      return omp.takeError();
    llvm::consumeError(omp.takeError()); // every node gets --num-threads
  } else {
    ompSet = omp->has_value();
  }
  if (!opts.script.empty()) {
    if (!llvm::sys::fs::can_execute(opts.script.front()))
      return makeError("{0}: the script's interpreter is not found or not executable",
                       opts.script.front());
    if (opts.script.size() < 2 || !llvm::sys::fs::exists(opts.script[1]))
      return makeError("{0}: no such script", opts.script.size() < 2 ? "" : opts.script[1]);
    return ompSet;
  }
  if (!llvm::sys::fs::can_execute(opts.executor))
    return makeError("{0}: oar-executor not found or not executable", opts.executor);
  if (llvm::sys::fs::exists(opts.modelDir + "/trainer.pb"))
    return makeError("{0} is a transpiled directory with fixed endpoints; give oar-launch the "
                     "single-machine model directory (main.pb, startup.pb)",
                     opts.modelDir);
  for (const char *f : {"/main.pb", "/startup.pb"})
    if (!llvm::sys::fs::exists(opts.modelDir + f))
      return makeError("{0}{1}: missing; the model directory needs main.pb and startup.pb",
                       opts.modelDir, f);
  return ompSet;
}

/// CURVE keys made for this launch; null when the flags name keys of their own or this libzmq
/// has no CURVE (said on opts.print).
llvm::Expected<std::unique_ptr<LaunchKeys>> launchKeys(const LaunchOptions &opts) {
  bool keysGiven = llvm::any_of(opts.extraArgs, [](const std::string &a) {
    return llvm::StringRef(a).startswith("--curve");
  });
  if (!opts.curve || keysGiven)
    return nullptr;
  if (opts.mode == Mode::Collective || opts.hybrid) {
    if (opts.print)
      opts.print(
          "oar-launch: collective and hybrid jobs have no CURVE keys yet: the trainers meet at a "
          "rendezvous on 127.0.0.1 that only this user's processes can reach");
    return nullptr;
  }
  if (!curveAvailable()) {
    if (opts.print)
      opts.print("oar-launch: this libzmq has no CURVE: the job runs unauthenticated on "
                 "127.0.0.1");
    return nullptr;
  }
  return LaunchKeys::create(opts.workers);
}

/// What each node of one launch is started with.
struct LaunchPlan {
  const LaunchOptions &opts;
  bool ompSet = false;
  std::unique_ptr<LaunchKeys> keys;
  /// The servers' ports (the scheduler's alone, with one), held until their nodes start.
  std::vector<HeldPort> ports;
  std::vector<std::string> common;       ///< every node's flags
  LaunchedNodes::Env base;               ///< every node's environment
  std::vector<std::string> viaScheduler; ///< with a scheduler: its address and the counts

  std::string endpoint(size_t i) const { return "127.0.0.1:" + std::to_string(ports[i].port()); }
  /// Collective and hybrid jobs: the trainers meet at trainer 0, on the last port held (with a
  /// scheduler, at the endpoint trainer 0 registered there).
  bool meetsTrainers() const { return opts.mode == Mode::Collective || opts.hybrid; }
  bool heldRendezvous() const { return meetsTrainers() && !opts.scheduler; }
  std::string rendezvous() const { return endpoint(ports.size() - 1); }

  /// A node's flags with its --num-threads (its role's `given`, else its `share`) added.
  std::vector<std::string> withThreads(std::vector<std::string> args, int given, int share) const {
    if (auto flag = nodeThreadsFlag(opts.extraArgs, ompSet, given, share))
      args.push_back(*flag);
    return args;
  }

  std::vector<std::string> schedulerArgs() const {
    auto args = viaScheduler;
    args.push_back("--role=scheduler");
    if (keys) // it serves with the pservers' pair and accepts them and the trainers
      llvm::append_range(args, keys->pserverArgs());
    return args;
  }

  void appendLoad(std::vector<std::string> &args) const {
    args.insert(args.end(), {"--load", opts.loadDir});
    if (opts.loadStep)
      args.push_back("--step=" + std::to_string(*opts.loadStep));
  }

  std::vector<std::string> pserverArgs(int i, LaunchedNodes::Env &env) const {
    auto args = common;
    if (opts.scheduler)
      llvm::append_range(
          args, std::vector<std::string>{"--role=pserver", "--pserver-id=" + std::to_string(i)});
    else
      env.insert(env.end(), {{env::kPaddleTrainingRole, "PSERVER"},
                             {env::kPaddleCurrentEndpoint, endpoint(i)},
                             {env::kPaddleCurrentIp, "127.0.0.1"},
                             {env::kPaddlePserverPort, std::to_string(ports[i].port())}});
    llvm::append_range(args, viaScheduler);
    if (!opts.loadDir.empty())
      appendLoad(args);
    if (!opts.saveDir.empty())
      args.insert(args.end(), {"--save", opts.saveDir});
    if (keys)
      llvm::append_range(args, keys->pserverArgs());
    return withThreads(args, opts.pserverThreads, 1);
  }

  std::vector<std::string> trainerArgs(int i, LaunchedNodes::Env &env) const {
    auto args = common;
    if (opts.mode == Mode::Collective && !opts.scheduler) { // they meet at trainer 0's held port
      llvm::append_range(
          args, std::vector<std::string>{"--role=trainer", "--trainer-id=" + std::to_string(i),
                                         "--trainers=" + std::to_string(opts.workers),
                                         "--rendezvous=" + rendezvous()});
    } else if (opts.scheduler) {
      llvm::append_range(
          args, std::vector<std::string>{"--role=trainer", "--trainer-id=" + std::to_string(i)});
    } else {
      env.insert(env.end(), {{env::kPaddleTrainingRole, "TRAINER"},
                             {env::kPaddleTrainerId, std::to_string(i)}});
    }
    if (opts.hybrid && !opts.scheduler) // the dense params' all-reduce
      args.push_back("--rendezvous=" + rendezvous());
    if (meetsTrainers() && i == 0 && !opts.loadDir.empty()) // what it loaded, it broadcasts
      appendLoad(args);
    llvm::append_range(args, viaScheduler);
    if (!opts.saveDir.empty())
      args.insert(args.end(), {"--save", opts.saveDir});
    if (keys)
      llvm::append_range(args, keys->trainerArgs(i));
    if (opts.trainerDevice == "cuda") // each local trainer gets a GPU in turn
      args.push_back("--device=cuda:" + std::to_string(i % std::max(1, opts.gpuCount)));
    else if (opts.trainerDevice == "cpu")
      args.push_back("--device=cpu");
    // Each node gets its share of the cores: OpenMP processes that oversubscribe them collapse.
    return withThreads(args, opts.trainerThreads, usableCores() / opts.workers);
  }
};

/// Plans the launch: keys, held ports, and what every node gets.
llvm::Expected<LaunchPlan> planLaunch(const LaunchOptions &opts) {
  LaunchPlan plan{opts};
  if (llvm::Error err = checkLaunch(opts).moveInto(plan.ompSet))
    return std::move(err);
  if (llvm::Error err = launchKeys(opts).moveInto(plan.keys))
    return std::move(err);
  // Each server's port is held from here until the server takes its socket over (OAR_LISTEN_FD):
  // no other process can take it meanwhile. With a scheduler, pservers pick their own.
  // A collective job's one port is trainer 0's rendezvous.
  // A hybrid job's trainers meet at one more: trainer 0's rendezvous (with a scheduler, at the
  // endpoint trainer 0 registers there).
  bool onePort = opts.scheduler || opts.mode == Mode::Collective;
  int count = (onePort ? 1 : opts.servers) + (plan.heldRendezvous() && opts.hybrid ? 1 : 0);
  if (llvm::Error err = HeldPort::onLoopback(count).moveInto(plan.ports))
    return std::move(err);
  // A script builds its own programs and sets its mode (fleet's DistributedStrategy).
  if (opts.script.empty()) {
    plan.common = {"--main",    opts.modelDir + "/main.pb",
                   "--startup", opts.modelDir + "/startup.pb",
                   "--mode",    opts.hybrid ? "hybrid" : modeName(opts.mode).str()};
    if (opts.hybrid)
      plan.common.push_back("--hybrid-tables=" + modeName(opts.mode).str());
  }
  llvm::append_range(plan.common, opts.extraArgs);
  // A random id per launch: its pservers refuse trainers of any other launch.
  std::random_device entropy;
  plan.base = {{env::kOarJobId, llvm::formatv("{0:x8}{1:x8}", entropy(), entropy()).str()}};
  if (opts.scheduler) { // every node gets its address and the counts; it hands out the rest
    plan.viaScheduler = {"--scheduler=" + plan.endpoint(0),
                         "--pserver-count=" + std::to_string(opts.servers),
                         "--trainers=" + std::to_string(opts.workers)};
  } else if (opts.mode == Mode::Collective) {
    // Nothing more: each trainer's flags say where to meet.
  } else {
    std::vector<std::string> endpoints;
    for (size_t i = 0; i < size_t(opts.servers); ++i)
      endpoints.push_back(plan.endpoint(i));
    plan.base.insert(plan.base.end(), {{env::kPaddlePserversIpPortList, llvm::join(endpoints, ",")},
                                       {env::kPaddlePserverIps, "127.0.0.1"},
                                       {env::kPaddleTrainers, std::to_string(opts.workers)}});
  }
  return plan;
}

/// A script's nodes get their flags in OAR_NODE_FLAGS and run the script instead.
void asScript(const LaunchOptions &opts, std::vector<std::string> &args, LaunchedNodes::Env &env) {
  if (opts.script.empty())
    return;
  env.emplace_back(env::kOarNodeFlags, llvm::join(args, "\n"));
  args.assign(opts.script.begin() + 1, opts.script.end());
}

} // namespace

llvm::Error launch(const LaunchOptions &opts) {
  auto plan = planLaunch(opts);
  if (!plan)
    return plan.takeError();
  bool script = !opts.script.empty();
  LaunchedNodes nodes(script ? opts.script.front() : opts.executor, opts.print, opts.tailLines);
  if (opts.scheduler) {
    auto env = plan->base;
    auto args = plan->schedulerArgs();
    asScript(opts, args, env);
    nodes.start("scheduler", args, env, &plan->ports.front());
  }
  for (int i = 0; i < opts.servers; ++i) {
    auto env = plan->base;
    auto args = plan->pserverArgs(i, env);
    asScript(opts, args, env);
    nodes.start("pserver." + std::to_string(i), args, env,
                opts.scheduler ? nullptr : &plan->ports[i]);
  }
  for (int i = 0; i < opts.workers; ++i) {
    auto env = plan->base;
    auto args = plan->trainerArgs(i, env);
    asScript(opts, args, env);
    bool rendezvous = plan->heldRendezvous() && i == 0;
    nodes.start("trainer." + std::to_string(i), args, env,
                rendezvous ? &plan->ports.back() : nullptr);
  }
  plan->ports.clear(); // the servers hold their sockets now
  // In async and GEO modes the pservers serve the other trainers on when one fails; a collective
  // job cannot go on without one of its trainers.
  bool trainersMayFail = !opts.hybrid && (opts.mode == Mode::Async || opts.mode == Mode::Geo);
  LaunchOutcome outcome = nodes.watch(trainersMayFail, opts.timeoutSec, opts.shouldStop);
  nodes.stopAll();
  if (outcome.failed) {
    std::string lines;
    for (const std::string &l : outcome.failed->tail)
      lines += "\n  " + l;
    return makeError("{0} failed ({1}); its last lines:{2}", outcome.failed->name, outcome.reason,
                     lines);
  }
  if (!outcome.reason.empty())
    return makeError("{0}; every node was stopped", outcome.reason);
  return llvm::Error::success();
}

} // namespace oar::runtime
