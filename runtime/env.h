// What the distributed ops' kernels reach through KernelContext::env().
#pragma once

#include "runtime/communicator.h"
#include "runtime/pserver.h"

namespace oar::runtime {

struct RunEnv {
  Communicator *comm = nullptr;            ///< set on trainers
  const proto::Program *program = nullptr; ///< the program being run (pservers' sub-blocks)
  PserverOptions pserver;                  ///< used by listen_and_serv
  int64_t geoStep = 0;                     ///< steps since the trainer started (GEO)
  bool forceGeoSync = false;               ///< sync now whatever the step (the final flush)
  bool trainersFailed = false; ///< listen_and_serv ended because trainers reported errors
};

} // namespace oar::runtime
