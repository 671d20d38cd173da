// The pserver's listen_and_serv loop.
#pragma once

#include <functional>
#include <map>
#include <memory>

#include "checkpoint/load_model.h"
#include "executor/executor.h"
#include "runtime/pserver/pserver_options.h"
#include "runtime/security/curve.h"
#include "runtime/transport/held_port.h"
#include "runtime/wire/timeouts.h"
#include "support/error.h"

namespace oar::runtime {

/// What the node that runs a pserver gives it: where it serves, whom it lets in, what it starts
/// from and keeps, and how it reports (PserverOptions are the user's settings).
struct PserverRun {
  /// --lr: the base learning rate of every block and table, set after the state is loaded.
  std::optional<float> learningRate;
  Timeouts timeouts;
  std::string bind; ///< host:port to bind; empty: the endpoint
  /// The endpoint's port, held since it was picked (by a launcher or the scheduler client):
  /// taken over instead of bound again. Null: bound.
  std::shared_ptr<HeldPort> heldPort;
  std::function<void(const std::string &)> log; ///< one line per call (no newline); any thread
  /// Threads that run the optimize blocks (each block always on the same one); 0 runs them on
  /// the loop's own thread.
  int serviceThreads = 0;
  /// The process's compute threads as its first line names them (describeComputeThreads).
  std::string computeThreads;
  /// A checkpoint to load distributed tables' rows from before serving (nullptr: none), what
  /// was loaded of it already (the blocks), and whether training goes on from it (the
  /// optimizer-state rule of checkpoint/load_model.h).
  const CheckpointReader *loadFrom = nullptr;
  LoadReport loaded;
  bool training = true;
  /// Where distributed tables save their rows after every trainer completed (empty: nowhere).
  std::string tableSaveDir;
  /// --keep-best with --save: where trainer 0's SAVE_BEST writes the tables' rows (SAVE/best/
  /// tables). Taken from this pserver's own flags, never from the wire. Empty: SAVE_BEST refused.
  std::string bestTableSaveDir;
  /// The launch this pserver belongs to: a HELLO of another launch is refused. Empty: any.
  std::string jobId;
  /// Async: trainers beyond the job's count may join while it runs (a scheduler gives them ids
  /// past the count), and the pserver serves until every trainer that joined has completed.
  bool elastic = false;
  /// A hybrid job's pserver (the tables only): its trainers all-reduce among themselves, so when
  /// one leaves after an error the others are failing too, in any mode: the job is over.
  bool hybrid = false;
  /// Polled: trainers known to be gone (the scheduler's heartbeats), with why. Sync: the job
  /// fails at once naming it; async: it is lost, as one silent past the barrier timeout.
  std::function<std::map<int64_t, std::string>()> goneTrainers;
  /// Write a checkpoint (pserver_checkpoint.h) to checkpointDir every checkpointEvery steps,
  /// keeping the newest checkpointKeep. A pserver started with a checkpoint there resumes from
  /// the newest; trainers then bring the other pservers back to the same step.
  std::string checkpointDir;
  int64_t checkpointEvery = 0;
  int checkpointKeep = 3;
  /// CURVE: only trainers whose public key is in `curve.allowed` can connect, and traffic is
  /// encrypted. Without it, traffic is plain and the pserver binds 127.0.0.1 by default.
  CurveConfig curve;
  /// Polled: true ends the run (SIGTERM), failing every waiting trainer. Unset: never.
  std::function<bool()> shouldStop;
  /// Polled after each step (sync) or message (async, GEO) of a checkpointing pserver: true once
  /// per request for a checkpoint now (SIGUSR1). Unset: none.
  std::function<bool()> checkpointRequested;
};

/// Serves one pserver program until every trainer has completed. One thread owns the socket:
/// it checks every message and answers it; optimize blocks run on service threads, each block
/// always on the same thread, so no update is torn and blocks update in parallel. Replies keep
/// each trainer's request order.
///
/// Sync: gradients are kept per trainer; when every live trainer has sent its send_barrier for a
/// step, the optimize blocks average the live trainers' copies and update (all blocks of the
/// step before any param is served); a trainer's get_var is answered once the server has
/// applied every step that trainer closed (sync_steps.cc).
/// Async: each gradient runs its optimize block on arrival; a get_var is answered with the
/// param's version after the updates queued before it, which is never written again (see
/// ParamVersions). GEO: each delta is added on arrival (arrival_steps.cc).

/// A pserver's run ended because trainers completed with errors (the text names them).
using TrainersFailedError = KindedError<struct TrainersFailedKind>;

class PserverLoop {
public:
  /// `program` holds block 0 with listen_and_serv and the optimize blocks.
  PserverLoop(const proto::Program &program, Scope &scope, PserverOptions options, PserverRun run);
  ~PserverLoop();
  /// Returns success once all trainers completed; an error naming the trainer(s) or the cause
  /// otherwise (a lost trainer in sync mode, a timeout, a signal).
  llvm::Error run();

  /// Test hook: called after the socket is bound with the endpoint actually bound.
  std::function<void(const std::string &)> onBound;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace oar::runtime
