// Running one node of a distributed job: a trainer or a pserver, once its start (start_node.h)
// has worked out where it stands.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "executor/device.h"
#include "runtime/cluster/cluster.h"
#include "runtime/node/driven_steps.h"
#include "runtime/node/node_options.h"
#include "train/training_loop.h"

namespace oar::runtime {

class HeldPort; // runtime/transport/held_port.h

/// The programs one node runs.
struct NodePrograms {
  proto::Program main, startup;
};

/// A node ready to run: the user's settings, what its start worked out from them and the
/// environment, and the hooks of the process that runs it.
struct Node {
  NodeOptions options;
  /// Its place in the job: role, ids, every endpoint.
  ClusterSpec cluster;
  /// CURVE keys (runtime/security/curve.h), loaded from options.keys: a pserver then accepts
  /// only the listed trainer keys, a trainer authenticates with its own and checks the
  /// pservers' key. Empty: plain TCP.
  CurveConfig curve;
  /// A pserver's port (or collective trainer 0's rendezvous port), held since it was picked (by
  /// oar-launch, or joining a scheduler): taken over instead of bound again, so no other process
  /// can take it meanwhile. Null: bound.
  std::shared_ptr<HeldPort> heldPort;
  /// Collective and hybrid trainers: where trainer 0 serves the rendezvous (host:port), and the
  /// address this trainer's Gloo pairs listen on (the others connect).
  std::string rendezvous;
  std::string collectiveHost = "127.0.0.1";
  /// Where a trainer computes (pservers always on the CPU), and its compute threads with where
  /// the count came from (describeComputeThreads): the node's first lines name them.
  Place place;
  std::string computeThreads;
  /// A trainer's evaluation (trainer 0 only), NaN handling and callbacks; runTrainer sets the
  /// rest (its share of the data, its steps).
  TrainOptions train;
  /// A PS or hybrid job's trainer 0 with --keep-best: the pservers' part of a best save (their
  /// tables' rows), set once they are connected; the best model calls it (bestModelOf).
  std::shared_ptr<std::function<llvm::Error()>> bestTablesSave;
  std::function<void(const StepReport &)> onStep;
  std::function<void(const std::string &)> log; ///< the runtime's lines (any thread)
  /// Trainers the scheduler reported gone (PserverRun::goneTrainers); unset: none.
  std::function<std::map<int64_t, std::string>()> goneTrainers;
  /// Collective and hybrid jobs: CollectiveOptions::onStuckWithPeerGone (a collective waiting on
  /// a rank that is gone, which Gloo may not end before the timeout; the process ends there).
  std::function<void(const std::string &)> onCollectiveStuck;
  /// Polled by every loop that waits: true stops the node (SIGTERM). Unset: never.
  std::function<bool()> shouldStop;
  /// Polled by a checkpointing pserver: true once per request for a checkpoint (SIGUSR1).
  std::function<bool()> checkpointRequested;
  /// The single-machine programs its caller built (a Python script), transpiled for the node
  /// instead of --main and --startup. Null: from the options.
  std::shared_ptr<const NodePrograms> singleMachine;
  /// A trainer whose steps its caller drives instead of the train feed. Unset: the feed's.
  StepDriver drive;
};

/// This node's programs: from a transpiled directory (trainer.pb, pserver.<i>.pb, ...) or by
/// transpiling the single-machine main/startup (the caller's, else the files) in-process with
/// the node's plan.
llvm::Expected<NodePrograms> nodePrograms(const Node &node);

/// Connects, runs startup (fetching the params), trains over this trainer's share of the rows,
/// tells the pservers it completed; trainer 0 saves whole params to saveDir and reports the test
/// set. `testResult` receives the evaluation when the program has a test feed. A collective
/// job's program runs runCollectiveTrainer.
llvm::Error runTrainer(const NodePrograms &progs, const Node &node,
                       std::optional<EvalResult> &testResult);

/// runTrainer for a collective job's program (runtime/collective/): joins the other trainers at
/// the rendezvous, starts from trainer 0's params (loaded from loadDir there), trains with the
/// gradients averaged over the trainers each step; trainer 0 evaluates and saves.
llvm::Error runCollectiveTrainer(const NodePrograms &progs, const Node &node,
                                 std::optional<EvalResult> &testResult);

/// Runs startup (or loads whole params from loadDir, sliced to this pserver's blocks), serves
/// until every trainer completed, then saves its blocks and optimizer state to
/// saveDir/pserver.<i>/. A run that ended because trainers reported errors is a
/// TrainersFailedError, and saves nothing.
llvm::Error runPserver(const NodePrograms &progs, const Node &node);

} // namespace oar::runtime
