// The local launcher.
#include "runtime/cluster/launcher.h"

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <mutex>
#include <random>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

#include "executor/threads.h"
#include "runtime/security/curve.h"
#include "runtime/security/launch_keys.h"
#include "runtime/transport/held_port.h"
#include "support/env_names.h"
#include "support/error.h"
#include "support/signals.h"
#include "transpiler/config.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

namespace {

struct Node {
  std::string name; // "pserver.0", "trainer.1"
  bool isTrainer() const { return llvm::StringRef(name).startswith("trainer."); }
  pid_t pid = -1;
  int outFd = -1;
  std::thread reader;
  std::deque<std::string> tail;
  bool done = false;
  int status = 0;
};

/// Starts `exe` with its output on a pipe whose read end goes to `outFd`, and `handOver` (a held
/// port's socket, or -1) open in it. A failed pipe or fork is an error, never a pid of -1:
/// kill(-1, ...) would signal every process the user owns.
llvm::Expected<pid_t> spawn(const std::string &exe, const std::vector<std::string> &args,
                            const std::vector<std::pair<std::string, std::string>> &env,
                            int handOver, int &outFd) {
  int pipeFds[2];
  if (pipe(pipeFds) != 0)
    return makeError("pipe: {0}", strerror(errno));
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close(pipeFds[0]);
    close(pipeFds[1]);
    return makeError("fork: {0}", strerror(err));
  }
  if (pid == 0) {
    unblockWatchedSignals();          // this process blocks them for its watcher thread
    prctl(PR_SET_PDEATHSIG, SIGTERM); // no orphans if the launcher dies
    if (getppid() != parent)
      _exit(1);
    dup2(pipeFds[1], STDOUT_FILENO);
    dup2(pipeFds[1], STDERR_FILENO);
    close(pipeFds[0]);
    close(pipeFds[1]);
    if (handOver >= 0) // every held port is close-on-exec; this node's stays open
      fcntl(handOver, F_SETFD, 0);
    for (const auto &[k, v] : env)
      setenv(k.c_str(), v.c_str(), 1);
    std::vector<char *> argv{const_cast<char *>(exe.c_str())};
    for (const std::string &a : args)
      argv.push_back(const_cast<char *>(a.c_str()));
    argv.push_back(nullptr);
    execv(exe.c_str(), argv.data());
    dprintf(STDERR_FILENO, "cannot run %s: %s\n", exe.c_str(), strerror(errno));
    _exit(127);
  }
  close(pipeFds[1]);
  outFd = pipeFds[0];
  return pid;
}

std::string describeStatus(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

} // namespace

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

llvm::Error launch(const LaunchOptions &opts) {
  if (opts.servers < 1 || opts.workers < 1)
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
  if (!llvm::sys::fs::can_execute(opts.executor))
    return makeError("{0}: oar-executor not found or not executable", opts.executor);
  std::vector<std::string> common;
  std::string trainerPb = opts.modelDir + "/trainer.pb";
  if (llvm::sys::fs::exists(trainerPb))
    return makeError("{0} is a transpiled directory with fixed endpoints; give oar-launch the "
                     "single-machine model directory (main.pb, startup.pb)",
                     opts.modelDir);
  for (const char *f : {"/main.pb", "/startup.pb"})
    if (!llvm::sys::fs::exists(opts.modelDir + f))
      return makeError("{0}{1}: missing; the model directory needs main.pb and startup.pb",
                       opts.modelDir, f);
  common = {"--main",    opts.modelDir + "/main.pb",
            "--startup", opts.modelDir + "/startup.pb",
            "--mode",    modeName(opts.mode).str()};
  common.insert(common.end(), opts.extraArgs.begin(), opts.extraArgs.end());
  std::unique_ptr<LaunchKeys> keys;
  bool keysGiven = llvm::any_of(opts.extraArgs, [](const std::string &a) {
    return llvm::StringRef(a).startswith("--curve");
  });
  if (opts.curve && !keysGiven) {
    if (!curveAvailable()) {
      if (opts.print)
        opts.print("oar-launch: this libzmq has no CURVE: the job runs unauthenticated on "
                   "127.0.0.1");
    } else if (auto made = LaunchKeys::create(opts.workers)) {
      keys = std::move(*made);
    } else {
      return made.takeError();
    }
  }
  // Each server's port is held from here until the server takes its socket over (OAR_LISTEN_FD):
  // no other process can take it meanwhile. With a scheduler, pservers pick their own.
  auto ports = HeldPort::onLoopback(opts.scheduler ? 1 : opts.servers);
  if (!ports)
    return ports.takeError();
  std::vector<std::string> endpoints;
  for (const HeldPort &p : *ports)
    endpoints.push_back("127.0.0.1:" + std::to_string(p.port()));
  std::string list = llvm::join(endpoints, ",");

  std::mutex printMutex;
  std::vector<std::unique_ptr<Node>> nodes;
  std::string startFailure; // after a node cannot start, no other starts and the job stops
  auto start = [&](const std::string &name, std::vector<std::string> args,
                   std::vector<std::pair<std::string, std::string>> env,
                   const HeldPort *port = nullptr) {
    if (!startFailure.empty())
      return;
    auto node = std::make_unique<Node>();
    node->name = name;
    if (port)
      env.emplace_back(env::kOarListenFd, std::to_string(port->fd()));
    auto pid = spawn(opts.executor, args, env, port ? port->fd() : -1, node->outFd);
    if (!pid) {
      startFailure = "cannot start " + name + " (" + llvm::toString(pid.takeError()) + ")";
      return;
    }
    node->pid = *pid;
    Node *n = node.get();
    auto readOutput = [n, &opts, &printMutex] {
      FILE *f = fdopen(n->outFd, "r");
      char *line = nullptr;
      size_t cap = 0;
      ssize_t len;
      while ((len = getline(&line, &cap, f)) > 0) {
        std::string text(line, len);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
          text.pop_back();
        std::lock_guard<std::mutex> lock(printMutex);
        n->tail.push_back(text);
        if (n->tail.size() > static_cast<size_t>(opts.tailLines))
          n->tail.pop_front();
        if (opts.print)
          opts.print("[" + n->name + "] " + text);
      }
      free(line);
      fclose(f);
    };
    try {
      n->reader = std::thread(readOutput);
    } catch (const std::system_error &e) { // a thread limit: the node cannot be watched
      startFailure = "cannot start " + name + " (a thread to read its output: " + e.what() + ")";
      kill(n->pid, SIGKILL);
      waitpid(n->pid, nullptr, 0);
      close(n->outFd);
      return;
    }
    nodes.push_back(std::move(node));
  };
  // A random id per launch: its pservers refuse trainers of any other launch.
  std::random_device entropy;
  std::string jobId = llvm::formatv("{0:x8}{1:x8}", entropy(), entropy()).str();
  std::vector<std::pair<std::string, std::string>> base{{env::kOarJobId, jobId}};
  if (!opts.scheduler)
    base.insert(base.end(), {{env::kPaddlePserversIpPortList, list},
                             {env::kPaddlePserverIps, "127.0.0.1"},
                             {env::kPaddleTrainers, std::to_string(opts.workers)}});
  // With a scheduler, every node gets its address and the counts; it hands out the rest.
  std::vector<std::string> viaScheduler;
  if (opts.scheduler) {
    viaScheduler = {"--scheduler=" + endpoints.front(),
                    "--pserver-count=" + std::to_string(opts.servers),
                    "--trainers=" + std::to_string(opts.workers)};
    auto args = viaScheduler;
    args.push_back("--role=scheduler");
    if (keys) // it serves with the pservers' pair and accepts them and the trainers
      llvm::append_range(args, keys->pserverArgs());
    start("scheduler", args, base, &ports->front());
  }
  // Each node gets its share of the cores: OpenMP processes that oversubscribe them collapse.
  auto withThreads = [&](std::vector<std::string> args, int given, int share) {
    if (auto flag = nodeThreadsFlag(opts.extraArgs, ompSet, given, share))
      args.push_back(*flag);
    return args;
  };
  int trainerShare = usableCores() / opts.workers;
  for (int i = 0; i < opts.servers; ++i) {
    auto env = base;
    auto args = common;
    if (opts.scheduler)
      llvm::append_range(
          args, std::vector<std::string>{"--role=pserver", "--pserver-id=" + std::to_string(i)});
    else
      env.insert(env.end(), {{env::kPaddleTrainingRole, "PSERVER"},
                             {env::kPaddleCurrentEndpoint, endpoints[i]},
                             {env::kPaddleCurrentIp, "127.0.0.1"},
                             {env::kPaddlePserverPort, std::to_string((*ports)[i].port())}});
    llvm::append_range(args, viaScheduler);
    if (!opts.loadDir.empty())
      args.insert(args.end(), {"--load", opts.loadDir});
    if (!opts.saveDir.empty())
      args.insert(args.end(), {"--save", opts.saveDir});
    if (keys)
      llvm::append_range(args, keys->pserverArgs());
    start("pserver." + std::to_string(i), withThreads(args, opts.pserverThreads, 1), env,
          opts.scheduler ? nullptr : &(*ports)[i]);
  }
  for (int i = 0; i < opts.workers; ++i) {
    auto env = base;
    auto args = common;
    if (opts.scheduler)
      llvm::append_range(
          args, std::vector<std::string>{"--role=trainer", "--trainer-id=" + std::to_string(i)});
    else
      env.insert(env.end(), {{env::kPaddleTrainingRole, "TRAINER"},
                             {env::kPaddleTrainerId, std::to_string(i)}});
    llvm::append_range(args, viaScheduler);
    if (!opts.saveDir.empty())
      args.insert(args.end(), {"--save", opts.saveDir});
    if (keys)
      llvm::append_range(args, keys->trainerArgs(i));
    if (opts.trainerDevice == "cuda") // each local trainer gets a GPU in turn
      args.push_back("--device=cuda:" + std::to_string(i % std::max(1, opts.gpuCount)));
    else if (opts.trainerDevice == "cpu")
      args.push_back("--device=cpu");
    start("trainer." + std::to_string(i), withThreads(args, opts.trainerThreads, trainerShare),
          env);
  }
  ports->clear(); // the servers hold their sockets now

  // Wait for every node; the first failure stops the rest. In async and GEO modes the pservers
  // serve the other trainers on when one fails, so a failed trainer stops nothing: the job
  // ends when the others do, and fails naming it.
  auto began = std::chrono::steady_clock::now();
  bool trainersMayFail = opts.mode != Mode::Sync;
  Node *failed = nullptr, *lostTrainer = nullptr;
  auto trainersDone = [&] {
    return llvm::all_of(nodes, [](const auto &n) { return n->done || !n->isTrainer(); });
  };
  // A node that exited with kExitOtherNodeFailed, and when: the node it names as the cause
  // usually exits a moment later, and that one is reported.
  Node *followedFailure = nullptr;
  std::chrono::steady_clock::time_point followedAt;
  std::string reason = startFailure;
  while (reason.empty()) {
    bool allDone = true;
    for (auto &n : nodes) {
      if (n->done)
        continue;
      if (waitpid(n->pid, &n->status, WNOHANG) == n->pid) {
        n->done = true;
        bool ok = WIFEXITED(n->status) && WEXITSTATUS(n->status) == 0;
        bool consequence = WIFEXITED(n->status) && WEXITSTATUS(n->status) == kExitOtherNodeFailed;
        bool trainer = n->isTrainer();
        // Async: a pserver (or scheduler) that ends with an error once a trainer was lost most
        // likely ends for it ("trainer(s) T were lost"), maybe before the last trainer's exit
        // is seen: it waits, as a consequence does, for the trainers to end.
        bool afterLoss = lostTrainer && !trainer && WIFEXITED(n->status);
        if (!ok && trainersMayFail && trainer) {
          if (!lostTrainer)
            lostTrainer = n.get();
        } else if (!ok && !failed && !consequence && !afterLoss) {
          failed = n.get();
          reason = describeStatus(n->status);
        }
        if ((consequence || (!ok && afterLoss)) && !followedFailure)
          followedFailure = n.get(), followedAt = std::chrono::steady_clock::now();
      } else {
        allDone = false;
      }
    }
    // Async: once every trainer has ended, a lost one is the job's failure; its pservers would
    // otherwise wait out their barrier or idle timeout for it.
    if (lostTrainer && !failed && trainersDone()) {
      failed = lostTrainer;
      reason = describeStatus(lostTrainer->status);
      if (llvm::any_of(nodes, [&](const auto &n) {
            return n.get() != lostTrainer && n->isTrainer() && WIFEXITED(n->status) &&
                   WEXITSTATUS(n->status) == 0;
          }))
        reason += "; the other trainers trained on without it";
    }
    bool causeOverdue =
        followedFailure &&
        (allDone || std::chrono::steady_clock::now() - followedAt > std::chrono::seconds(2));
    if (!failed && causeOverdue)
      failed = followedFailure, reason = describeStatus(followedFailure->status);
    if (allDone || failed)
      break;
    if (stopRequested()) {
      reason = "stopped by signal " + std::to_string(stopSignal());
      break;
    }
    if (opts.timeoutSec > 0 &&
        std::chrono::steady_clock::now() - began > std::chrono::seconds(opts.timeoutSec)) {
      reason = "timed out after " + std::to_string(opts.timeoutSec) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  // Stop whatever still runs: SIGTERM, then SIGKILL after a grace period.
  for (auto &n : nodes)
    if (!n->done)
      kill(n->pid, SIGTERM);
  auto graceEnd = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (auto &n : nodes) {
    while (!n->done) {
      if (waitpid(n->pid, &n->status, WNOHANG) == n->pid) {
        n->done = true;
      } else if (std::chrono::steady_clock::now() > graceEnd) {
        kill(n->pid, SIGKILL);
        waitpid(n->pid, &n->status, 0);
        n->done = true;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
  for (auto &n : nodes)
    n->reader.join();
  if (failed) {
    std::string lines;
    for (const std::string &l : failed->tail)
      lines += "\n  " + l;
    return makeError("{0} failed ({1}); its last lines:{2}", failed->name, reason, lines);
  }
  if (!reason.empty())
    return makeError("{0}; every node was stopped", reason);
  return llvm::Error::success();
}

} // namespace oar::runtime
