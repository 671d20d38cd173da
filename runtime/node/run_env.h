// What the distributed ops' kernels reach through KernelContext::env().
#pragma once

#include "executor/kernel.h"
#include "runtime/collective/background_allreduce.h"
#include "runtime/pserver/pserver.h"
#include "runtime/trainer/communicator.h"

namespace oar::runtime {

class CollectiveGroup; // runtime/collective/collective_group.h

struct RunEnv : KernelEnv {
  Communicator *comm = nullptr;     ///< set on trainers of pserver jobs
  CollectiveGroup *group = nullptr; ///< set on trainers of collective jobs
  /// The gradient buckets' all-reduces (c_allreduce_start), made at the first; before the group.
  std::unique_ptr<BackgroundAllreduce> buckets;
  std::chrono::milliseconds collectiveTimeout{60000}; ///< how long a bucket's wait may take
  const proto::Program *program = nullptr; ///< the program being run (pservers' sub-blocks)
  PserverOptions pserver;                  ///< used by listen_and_serv, with pserverRun
  PserverRun pserverRun;
  int64_t geoStep = 0;         ///< steps since the trainer started (GEO)
  bool forceGeoSync = false;   ///< sync now whatever the step (the final flush)
  bool trainersFailed = false; ///< listen_and_serv ended because trainers reported errors
  /// Distributed tables, over the run: ids looked up (and pushed), the keys actually sent (each
  /// once per batch) and the bytes of keys and rows both ways.
  struct TableTraffic {
    int64_t ids = 0, keys = 0, bytes = 0, bytesWithoutDedup = 0;
  } tableTraffic;
};

/// The RunEnv of a distributed op's kernel; an error naming the op when the program does not run
/// as part of a job (or, with `needComm`, not as a trainer).
llvm::Expected<RunEnv *> envOf(KernelContext &ctx, bool needComm);

} // namespace oar::runtime
