// Running one node of a distributed job: a trainer or a pserver.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "runtime/cluster/cluster.h"
#include "runtime/security/curve.h"
#include "runtime/tables/table_memory.h"
#include "runtime/wire/timeouts.h"
#include "train/training_loop.h"
#include "transpiler/config.h"

namespace oar::runtime {

class HeldPort; // runtime/transport/held_port.h

struct NodeOptions {
  /// --lr: every optimizer's base learning rate, set after the state is loaded.
  std::optional<float> learningRate;
  /// --early-stop in a collective job: trainer 0 evaluates and decides, the others follow.
  bool earlyStop = false;
  ClusterSpec cluster;
  DistributeConfig config; ///< mode and slicing, for in-process transpiling
  Timeouts timeouts;
  /// The address a pserver (or collective trainer 0, its rendezvous) binds (host:port), if not
  /// its endpoint.
  std::string bind;
  /// Collective jobs: where trainer 0 serves the rendezvous the trainers meet at (host:port).
  std::string rendezvous;
  /// Collective jobs: the address this trainer's Gloo pairs listen on (the others connect).
  std::string collectiveHost = "127.0.0.1";
  /// Collective and hybrid jobs: TCP connections per pair of trainers (CollectiveOptions).
  int collectiveStreams = 1;
  /// Collective and hybrid jobs: CollectiveOptions::onStuckWithPeerGone (a collective waiting on
  /// a rank that is gone, which Gloo may not end before the timeout).
  std::function<void(const std::string &)> onCollectiveStuck;
  /// A pserver's port (or collective trainer 0's rendezvous port), held since it was picked (by
  /// oar-launch, or joining a scheduler): taken over instead of bound again, so no other process
  /// can take it meanwhile. Null: bound.
  std::shared_ptr<HeldPort> heldPort;
  /// CURVE keys (runtime/security/curve.h): a pserver then accepts only the listed trainer keys, a
  /// trainer authenticates with its own and checks the pservers' key. Empty: plain TCP.
  CurveConfig curve;
  std::string loadDir, saveDir, metricsPath;
  /// Trainer 0 writes its final test evaluation's predictions here (serving/score_file.h).
  std::string testScoresPath;
  /// Sync pservers checkpoint to checkpointDir/pserver.<i>/ every checkpointEvery steps
  /// (keeping the newest checkpointKeep) and resume from there when restarted.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int checkpointKeep = 3;
  /// Pservers: the memory their distributed tables may hold (PserverOptions::tableBudget), and
  /// whether a non-finite update is skipped rather than refused (PserverOptions::skipNonFinite).
  TableBudget tableBudget;
  bool skipNonFinite = false;
  std::function<void(const StepReport &)> onStep;
  std::function<void(const std::string &)> log;
  /// Async: trainers may join the running job (ids past the count; PserverOptions::elastic).
  bool elastic = false;
  /// Trainers the scheduler reported gone (PserverOptions::goneTrainers); unset: none.
  std::function<std::map<int64_t, std::string>()> goneTrainers;
  /// Trainers skip training: trainer 0 evaluates the test feed on the pservers' model (loaded
  /// with loadDir) and all complete.
  bool evalOnly = false;
  /// Where a trainer computes (pservers always on the CPU).
  Place place;
  /// Its compute threads and where the count came from (describeComputeThreads), for the log:
  /// the node's first lines name them.
  std::string computeThreads;
  /// A trainer's evaluation (trainer 0 only) and NaN handling; runTrainer sets the rest.
  TrainOptions train;
};

/// The programs one node runs.
struct NodePrograms {
  proto::Program main, startup;
};

/// This node's programs: from a transpiled directory (trainer.pb, pserver.<i>.pb, ...) or by
/// transpiling a single-machine main/startup in-process with `opts.config`.
llvm::Expected<NodePrograms> nodePrograms(const NodeOptions &opts, llvm::StringRef dir,
                                          llvm::StringRef mainPath, llvm::StringRef startupPath);

/// Connects, runs startup (fetching the params), trains over this trainer's share of the rows,
/// tells the pservers it completed; trainer 0 saves whole params to saveDir and reports the test
/// set. `testResult` receives the evaluation when the program has a test feed.
llvm::Error runTrainer(const NodePrograms &progs, const NodeOptions &opts,
                       std::optional<EvalResult> &testResult);

/// runTrainer for a collective job's program (runtime/collective/): joins the other trainers at
/// opts.rendezvous, starts from trainer 0's params (loaded from loadDir there), trains with
/// the gradients averaged over the trainers each step; trainer 0 evaluates and saves.
llvm::Error runCollectiveTrainer(const NodePrograms &progs, const NodeOptions &opts,
                                 std::optional<EvalResult> &testResult);

/// Runs startup (or loads whole params from loadDir, sliced to this pserver's blocks), serves
/// until every trainer completed, then saves its blocks and optimizer state to
/// saveDir/pserver.<i>/. A run that ended because trainers reported errors is a
/// TrainersFailedError, and saves nothing.
llvm::Error runPserver(const NodePrograms &progs, const NodeOptions &opts);

} // namespace oar::runtime
