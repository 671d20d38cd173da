// A local cluster in one call: pservers and trainers as child processes on 127.0.0.1.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/distributed_mode.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// The exit status of a node that failed only because another node of the job failed first (a
/// pserver whose trainers reported errors): oar-launch names the node that failed first.
inline constexpr int kExitOtherNodeFailed = 3;

struct LaunchOptions {
  int servers = 2, workers = 2;
  Mode mode = Mode::Sync;
  /// A hybrid job: tables on the pservers in `mode` (sync or async), dense params all-reduced
  /// among the trainers, which meet at trainer 0 (one more held port).
  bool hybrid = false;
  std::string modelDir; ///< main.pb + startup.pb, or a transpiled directory
  std::string executor; ///< path of oar-executor
  /// A script run as every node instead of oar-executor (a Python train.py that calls
  /// oar.fleet): its interpreter's path, then the script and its arguments. Each node's flags
  /// reach it in OAR_NODE_FLAGS, one a line; modelDir is unused. Empty: oar-executor.
  std::vector<std::string> script;
  std::string loadDir, saveDir;
  std::optional<int64_t> loadStep; ///< with loadDir: its checkpoint step (--step)
  std::vector<std::string> extraArgs; ///< passed to every node
  /// Compute threads per trainer and per pserver, 0 where not set by hand: then OMP_NUM_THREADS
  /// when set, else a trainer gets this host's cores split among the trainers and a pserver 1.
  /// Unused when extraArgs set --num-threads for every node.
  int trainerThreads = 0, pserverThreads = 0;
  /// Nodes authenticate with CURVE keys made for this launch (unless extraArgs name keys, or
  /// libzmq lacks CURVE); false: plain TCP on 127.0.0.1.
  bool curve = true;
  /// Start a scheduler too: nodes register there and the pservers pick their own ports, as in
  /// a cluster (MindSpore, ps-lite); false: the launcher hands out the endpoints.
  bool scheduler = false;
  /// "cuda": trainer i runs on GPU i mod gpuCount (--device=cuda:N); "cpu": on the CPU; empty:
  /// as the program says.
  std::string trainerDevice;
  int gpuCount = 1;
  int tailLines = 20;                             ///< a failed node's last lines to show
  int64_t timeoutSec = 0;                         ///< stop everything after this long (0: no limit)
  std::function<void(const std::string &)> print; ///< every output line, already prefixed
  /// Polled while the nodes run: true stops them all (the launcher's SIGTERM). Unset: never.
  std::function<bool()> shouldStop;
};

/// The --num-threads flag the launcher adds to a node's flags. Threads set by hand win, in this
/// order: a --num-threads among `extraArgs` (every node's flags: none is added), `given`
/// (--server-threads or --worker-threads; 0: not given), OMP_NUM_THREADS (`ompSet`: every node
/// reads it, so none is added). Otherwise the node's default `share` of the cores.
std::optional<std::string> nodeThreadsFlag(llvm::ArrayRef<std::string> extraArgs, bool ompSet,
                                           int given, int share);

/// Starts the nodes, prefixes each one's lines with its role and id, and waits. Returns success
/// when every node exited 0. If a node fails, stops the others and returns an error carrying
/// that node's last lines. No child outlives the call.
llvm::Error launch(const LaunchOptions &opts);

} // namespace oar::runtime
