// Runtime benchmark on 127.0.0.1: push (send_var) and pull (get_var) throughput of one trainer
// against one pserver for 4 KiB .. 16 MiB tensors, and samples/s of the MLP 784-512-256-10
// (batch 128 per trainer) with 1 trainer + 1 pserver and 2 trainers + 2 pservers, against the
// single-machine executor. Trainers and pservers run as threads of this process, or for push/pull
// also in two processes (--processes). Beside each push/pull figure stands plain ZeroMQ over the
// same transport (bench/raw_zmq.h): the limit of libzmq's DEALER (OAR_DIRECT_LINKS=0); a
// trainer's direct link skips its I/O thread, which plain ZeroMQ keeps (docs/runtime.md).
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <future>
#include <iostream>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "api/optimizer.h"
#include "api/recipes.h"
#include "bench/raw_zmq.h"
#include "runtime/node/node.h"
#include "runtime/trainer/communicator.h"
#include "runtime/transport/held_port.h"
#include "support/error.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace oar;
using namespace oar::runtime;
using Clock = std::chrono::steady_clock;
static llvm::ExitOnError exitOnErr("bench_runtime: ");

static double seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

static std::vector<std::string> endpoints(int n) {
  std::vector<std::string> eps;
  // Picked and let go: on a machine left to the bench nothing takes them before the servers bind.
  for (const HeldPort &p : exitOnErr(HeldPort::onLoopback(n)))
    eps.push_back("127.0.0.1:" + std::to_string(p.port()));
  return eps;
}

static std::future<void> servePserver(NodePrograms progs) {
  return std::async(std::launch::async, [progs] { exitOnErr(runPserver(progs, Node{})); });
}

/// The serving ends of a push/pull measurement: the pserver and the raw ZeroMQ echo, on threads
/// of this process or together in a child process (as a pserver of this host runs). They end when
/// the trainer completes and the raw client says stop; the destructor waits for that.
class Serving {
public:
  Serving(const NodePrograms &progs, const std::string &rawEndpoint, int64_t bytes,
          bool processes) {
    if (!processes) {
      echo_.emplace(rawEndpoint, bytes);
      echoThread_ = std::thread([this] { echo_->serve(); });
      pserver_ = servePserver(progs);
      return;
    }
    llvm::outs().flush();
    pid_t parent = getpid();
    child_ = fork();
    if (child_ < 0)
      exitOnErr(makeError("cannot fork the pserver's process: {0}", std::strerror(errno)));
    if (child_ > 0)
      return;
    // The child. No thread of the parent's runs here: the fork comes before the trainer's
    // threads start, and those of an earlier table have ended. It ends with the parent, which
    // may fail before it stops the echo.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
      _exit(1);
    bench::RawEcho echo(rawEndpoint, bytes);
    std::thread echoThread([&] { echo.serve(); });
    Node opts;
    opts.log = [](const std::string &line) { // how the tensors moved, for the reader
      if (line.find("peer memory") != std::string::npos)
        llvm::errs() << line << "\n";
    };
    if (llvm::Error err = runPserver(progs, opts)) { // the echo's thread ends with the process
      llvm::errs() << "bench_runtime: " << llvm::toString(std::move(err)) << "\n";
      llvm::errs().flush();
      _exit(1);
    }
    echoThread.join();
    llvm::errs().flush();
    _exit(0);
  }
  ~Serving() {
    if (child_ == 0) {
      echoThread_.join();
      pserver_.get();
      return;
    }
    int status = 0;
    if (waitpid(child_, &status, 0) != child_ || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      exitOnErr(makeError("the pserver's process {0} failed", child_));
  }

private:
  pid_t child_ = 0;
  std::optional<bench::RawEcho> echo_;
  std::thread echoThread_;
  std::future<void> pserver_;
};

/// Messages per turn: 32 MiB, 8 to 2000 of them.
static int roundsFor(int64_t bytes) {
  return static_cast<int>(std::clamp<int64_t>((int64_t(32) << 20) / bytes, 8, 2000));
}

/// One [n, 1] f32 parameter on a sync pserver (pushes are stored, never applied: no barrier is
/// sent), so the figures are the runtime's alone, and the raw ZeroMQ endpoint beside it.
struct PushPullPlan {
  explicit PushPullPlan(int64_t bytes) {
    ModelBuilder m;
    std::string loss = m.mean(m.fc(m.data("x", {bytes / 4}), 1));
    exitOnErr(SGD(0.1f).minimize(m, loss));
    std::vector<std::string> ports = endpoints(2); // distinct: neither is bound yet
    config.pservers = {ports[0]};
    config.sliceVarUp = false;
    plan = exitOnErr(transpile(m.main(), m.startup(), config));
    rawEndpoint = ports[1];
  }
  NodePrograms pserver() const { return {plan.pserver(0), plan.pserverStartup(0)}; }
  DistributeConfig config;
  TranspileResult plan;
  std::string rawEndpoint;
};

/// Both ends of a measurement: the serving ends (declared first, so they go last), the trainer's
/// communicator, connected, and then the raw client. That order of their ZeroMQ I/O threads is
/// what bench/placement.sh relies on to tell them apart (the communicator has none over a direct
/// link, docs/runtime.md).
struct PushPullEnds {
  PushPullEnds(const PushPullPlan &p, int64_t bytes, bool processes)
      : serving(p.pserver(), p.rawEndpoint, bytes, processes),
        comm(0, p.config.pservers, Timeouts{}) {
    exitOnErr(comm.connect({Mode::Sync, 1, p.plan.trainer().dist().plan_digest()}));
    raw.emplace(p.rawEndpoint, bytes);
  }
  Serving serving;
  Communicator comm;
  std::optional<bench::RawClient> raw;
};

/// Push and pull through the plan's pserver and the raw ends. The four measurements take turns,
/// twenty short turns each, and each keeps its best: a busy neighbour on a shared machine slows
/// one turn, not one column (with five turns of a second each, a quarter of the runs had no
/// quiet turn for one column and its ratio moved by 0.2).
static void pushPull(int64_t bytes, bool processes) {
  int64_t n = bytes / 4;
  PushPullPlan p(bytes);
  const DistributeConfig &c = p.config;
  double inf = std::numeric_limits<double>::infinity();
  double push = inf, pull = inf, stream = inf, roundTrip = inf;
  int rounds = roundsFor(bytes);
  {
    PushPullEnds ends(p, bytes, processes);
    Communicator &comm = ends.comm;
    bench::RawClient &raw = *ends.raw;
    Tensor grad(proto::F32, {n, 1}), got;
    for (int turn = 0; turn < 20; ++turn) {
      auto start = Clock::now();
      for (int i = 0; i < rounds; ++i)
        exitOnErr(comm.sendVars({{"fc_0.w_0@GRAD", &grad}}, c.pservers));
      exitOnErr(comm.flush());
      push = std::min(push, seconds(start));
      stream = std::min(stream, raw.stream(rounds));
      start = Clock::now();
      for (int i = 0; i < rounds; ++i)
        exitOnErr(comm.getVars({"fc_0.w_0"}, c.pservers, {&got}));
      pull = std::min(pull, seconds(start));
      roundTrip = std::min(roundTrip, raw.roundTrip(rounds));
    }
    exitOnErr(comm.complete());
  }
  auto gbps = [&](double s) { return static_cast<double>(bytes) * rounds / s / 1e9; };
  llvm::outs() << llvm::formatv(
      "{0,10} {1,7} {2,10:f3} {3,10:f3} {4,10:f3} {5,10:f3} {6,9:f1} {7,9:f1} {8,9:f2} {9,9:f2} "
      "{10,9:f2}\n",
      bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                         : std::to_string(bytes >> 10) + " KiB",
      rounds, gbps(push), gbps(stream), gbps(pull), gbps(roundTrip), pull / rounds * 1e6,
      roundTrip / rounds * 1e6, stream / push, stream / pull, pull / roundTrip);
}

static RecipeSpec mlpSpec(const std::string &images, const std::string &labels) {
  RecipeSpec s;
  s.model = "mlp", s.in = 784, s.hidden = {512, 256}, s.out = 10;
  s.loss = "softmax_with_cross_entropy", s.optimizer = "sgd", s.lr = 0.01f;
  s.batchSize = 128, s.epochs = 1, s.format = "mnist_idx", s.data = {images, labels};
  return s;
}

/// Training throughput of all trainers together: samples after each trainer's first step over
/// the time from the earliest first step's end to the latest last step's end (data loading,
/// connecting and the first step are left out).
struct StepClock {
  std::mutex mutex;
  Clock::time_point first = Clock::time_point::max(), last = Clock::time_point::min();
  int64_t samples = 0;
  std::function<void(const StepReport &)> callback() {
    return [this](const StepReport &r) {
      std::lock_guard<std::mutex> lock(mutex);
      auto now = Clock::now();
      if (r.step == 0)
        first = std::min(first, now);
      else
        samples += r.rows;
      last = std::max(last, now);
    };
  }
  double perSecond() const { return samples / std::chrono::duration<double>(last - first).count(); }
};

static double mlpSamplesPerSec(const RecipeSpec &spec, int64_t rows, int servers, int workers) {
  ModelBuilder m = exitOnErr(buildRecipe(spec));
  m.main().mutable_train_feed()->set_limit(rows);
  StepClock clock;
  if (servers == 0) {
    Executor exec;
    Scope scope;
    exitOnErr(exec.run(m.startup(), scope));
    TrainOptions opts;
    opts.onStep = clock.callback();
    exitOnErr(trainLoop(exec, m.main(), scope, opts));
    return clock.perSecond();
  }
  DistributeConfig c;
  c.trainers = workers;
  c.pservers = endpoints(servers);
  TranspileResult r = exitOnErr(transpile(m.main(), m.startup(), c));
  std::vector<std::future<void>> nodes;
  for (int i = 0; i < servers; ++i)
    nodes.push_back(servePserver({r.pserver(i), r.pserverStartup(i)}));
  for (int t = 0; t < workers; ++t)
    nodes.push_back(std::async(std::launch::async, [&, t] {
      Node opts;
      opts.cluster.trainerId = t;
      opts.onStep = clock.callback();
      std::optional<EvalResult> eval;
      exitOnErr(runTrainer({r.trainer(), r.trainerStartup()}, opts, eval));
    }));
  for (auto &n : nodes)
    n.get();
  return clock.perSecond();
}

/// Microseconds per pull (the best of `turns` turns) of one side alone, oar's or raw ZeroMQ's,
/// between two processes: no other traffic in between. With `goOnStdin` it prints "ready" once
/// every thread exists and times nothing before a line on stdin, so that bench/placement.sh can
/// pin each thread to a core first.
static void pullLatency(int64_t bytes, bool raw, int turns, bool goOnStdin) {
  PushPullPlan p(bytes);
  int rounds = roundsFor(bytes);
  double best = std::numeric_limits<double>::infinity();
  PushPullEnds ends(p, bytes, true);
  Communicator &comm = ends.comm;
  bench::RawClient &rawClient = *ends.raw;
  Tensor got;
  // One round each way first: every thread of both processes exists once it is back.
  exitOnErr(comm.getVars({"fc_0.w_0"}, p.config.pservers, {&got}));
  rawClient.roundTrip(1);
  if (goOnStdin) {
    llvm::outs() << "ready\n";
    llvm::outs().flush();
    std::string line;
    if (!std::getline(std::cin, line))
      exitOnErr(makeError("pull-latency: stdin closed before the go line"));
  }
  for (int turn = 0; turn < turns; ++turn) {
    if (raw) {
      best = std::min(best, rawClient.roundTrip(rounds));
      continue;
    }
    auto start = Clock::now();
    for (int i = 0; i < rounds; ++i)
      exitOnErr(comm.getVars({"fc_0.w_0"}, p.config.pservers, {&got}));
    best = std::min(best, seconds(start));
  }
  exitOnErr(comm.complete());
  llvm::outs() << llvm::formatv("{0} pull of {1} bytes: {2:f1} us\n", raw ? "raw" : "oar", bytes,
                                best / rounds * 1e6);
}

/// `pull-latency BYTES oar|raw [TURNS] [--go-on-stdin]`; false on arguments it cannot take.
static bool pullLatencyCommand(llvm::ArrayRef<llvm::StringRef> args) {
  bool go = llvm::is_contained(args, "--go-on-stdin");
  std::vector<llvm::StringRef> rest;
  for (llvm::StringRef a : args.drop_front())
    if (a != "--go-on-stdin")
      rest.push_back(a);
  int64_t bytes = 0;
  int turns = 100;
  if (rest.size() < 2 || rest.size() > 3 || rest[0].getAsInteger(10, bytes) || bytes < 4 ||
      bytes % 4 != 0 || (rest[1] != "oar" && rest[1] != "raw") ||
      (rest.size() == 3 && (rest[2].getAsInteger(10, turns) || turns < 1)))
    return false;
  pullLatency(bytes, rest[1] == "raw", turns, go);
  return true;
}

/// One push/pull table: the pserver on a thread of this process, or in a process of its own.
static void pushPullTable(const std::vector<int64_t> &sizes, bool processes) {
  llvm::outs() << llvm::formatv("\npush and pull, one trainer and one pserver {0}\n",
                                processes ? "in two processes (as oar-launch starts them)"
                                          : "as threads of one process");
  llvm::outs() << llvm::formatv(
      "{0,10} {1,7} {2,10} {3,10} {4,10} {5,10} {6,9} {7,9} {8,9} {9,9} {10,9}\n", "tensor",
      "rounds", "push GB/s", "stream", "pull GB/s", "raw RTT", "pull us", "raw us", "push/strm",
      "pull/strm", "pull/RTT");
  for (int64_t bytes : sizes)
    pushPull(bytes, processes);
}

int main(int argc, char **argv) {
  // `bench_runtime push-pull [bytes] [--processes]` measures push and pull only (of one size,
  // in one of the two set-ups), e.g. under perf.
  std::vector<llvm::StringRef> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "pull-latency") { // one side's pulls alone (see pullLatency)
    if (pullLatencyCommand(args))
      return 0;
    llvm::errs() << "usage: bench_runtime pull-latency BYTES oar|raw [TURNS] [--go-on-stdin] "
                    "(BYTES a multiple of 4, TURNS at least 1)\n";
    return 2;
  }
  bool pushPullOnly = !args.empty() && args[0] == "push-pull";
  bool processesOnly = llvm::is_contained(args, "--processes");
  llvm::outs() << llvm::formatv("machine: {0} cores, 127.0.0.1\n",
                                std::thread::hardware_concurrency());
  std::vector<int64_t> sizes = {int64_t(4) << 10, int64_t(64) << 10, int64_t(1) << 20,
                                int64_t(16) << 20};
  if (pushPullOnly && args.size() > 1 && args[1] != "--processes")
    sizes = {std::atoll(args[1].str().c_str())};
  if (!processesOnly)
    pushPullTable(sizes, false);
  if (!pushPullOnly || processesOnly)
    pushPullTable(sizes, true);
  if (pushPullOnly)
    return 0;

  // Fashion-MNIST's 60k training set comes from Debian's dataset-fashion-mnist; without it, the
  // repository's MNIST test set (same layout, 10k rows) stands in.
  std::string dir = "/usr/share/datasets/fashion-mnist/", set = "train", dataset = "Fashion-MNIST";
  int64_t rows = 16384;
  if (!llvm::sys::fs::exists(dir + "train-images-idx3-ubyte.gz")) {
    dir = OAR_BENCH_DIR "/../data/mnist/";
    set = "t10k";
    dataset = "MNIST t10k";
    rows = 10000;
    llvm::errs() << "bench_runtime: /usr/share/datasets/fashion-mnist/ is missing (apt-get install "
                    "dataset-fashion-mnist); using "
                 << dir << "\n";
  }
  RecipeSpec spec =
      mlpSpec(dir + set + "-images-idx3-ubyte.gz", dir + set + "-labels-idx1-ubyte.gz");
  llvm::outs() << llvm::formatv(
      "\nMLP 784-512-256-10, batch 128 per trainer, sync SGD, {0} {1} rows\n", rows, dataset);
  double single = mlpSamplesPerSec(spec, rows, 0, 1);
  llvm::outs() << llvm::formatv("{0,-28} {1,10:f0} samples/s\n", "single-machine executor", single);
  for (auto [servers, workers] : {std::pair{1, 1}, std::pair{2, 2}}) {
    double s = mlpSamplesPerSec(spec, rows, servers, workers);
    llvm::outs() << llvm::formatv(
        "{0,-28} {1,10:f0} samples/s  ({2:f2}x single)\n",
        llvm::formatv("{0} trainer(s) + {1} pserver(s)", workers, servers).str(), s, s / single);
  }
  return 0;
}
