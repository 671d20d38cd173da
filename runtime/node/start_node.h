// Starting one process of oar, whatever its role: the one entry a tool (oar-executor), a test or
// another front end calls with the node's settings and its environment.
#pragma once

#include <functional>
#include <string>

#include <memory>

#include "runtime/cluster/cluster.h"
#include "runtime/node/node.h"
#include "runtime/node/node_options.h"
#include "llvm/Support/raw_ostream.h"

namespace oar::runtime {

class HeldPort; // runtime/transport/held_port.h

/// What the process that runs a node gives it.
struct NodeIo {
  /// The environment: the launch conventions (TF_CONFIG, PADDLE_*, MS_*, DMLC_*, MPI, Slurm),
  /// OMP_NUM_THREADS, OAR_NODE_HOST, OAR_LISTEN_FD. Unset: none.
  GetEnv getenv;
  /// Progress, summaries and evaluations (a tool's stdout). Unset: nowhere.
  llvm::raw_ostream *out = nullptr;
  /// The runtime's lines, one per call, from any thread (a tool's stderr).
  std::function<void(const std::string &)> log;
  /// The error the node ends with, one line, from any thread (a tool prints it with its name).
  std::function<void(const std::string &)> error;
  /// Polled by every loop that waits: true stops the node (a tool's SIGTERM). Unset: never.
  std::function<bool()> shouldStop;
  /// Polled by a checkpointing pserver: true once per request for a checkpoint (SIGUSR1).
  std::function<bool()> checkpointRequested;
  /// A collective stuck on a rank that is gone: Gloo cannot be interrupted, so the process must
  /// end (the tool's, which then exits). Unset: the collective's own timeout ends it.
  std::function<void(const std::string &)> onCollectiveStuck;
  /// The port the caller holds for this node's server (a pserver's, collective trainer 0's
  /// rendezvous, a scheduler's), taken over instead of bound. Null: the one handed over in
  /// OAR_LISTEN_FD, if any.
  std::shared_ptr<HeldPort> heldPort;
  /// The single-machine programs, built by the caller (a Python script), instead of --main and
  /// --startup: the node transpiles them for its role. Null: the options say where they are.
  std::shared_ptr<const NodePrograms> programs;
  /// A trainer's steps, driven by the caller (a Python loop over its own batches) instead of the
  /// program's train feed; the node runs its start and its end around them. Unset: the feed's.
  StepDriver drive;
};

/// Runs the node `options` describe: on one machine when it has no role, else as a trainer, a
/// pserver or a scheduler of a job, placed by its flags over the environment's launch
/// convention, and by the job's scheduler when it has one (MPI rank 0 serves that scheduler
/// beside its own role). Returns the process's exit status: 0; 1 after an error reported through
/// io.error (and to the scheduler); kExitOtherNodeFailed when a pserver ended because a trainer
/// failed. Never exits the process.
int startNode(const NodeOptions &options, const NodeIo &io);

} // namespace oar::runtime
