// The DistributeTranspiler: a single-machine program -> trainer and pserver programs.
#pragma once

#include "transpiler/plan.h"

namespace oar {

/// Everything one transpilation writes.
struct TranspileResult {
  DistributePlan plan;
  proto::Program trainer, trainerStartup;
  std::vector<proto::Program> pservers, pserverStartups; // by endpoint index
};

/// Rewrites `main` + `startup` (unchanged) for `config`. Every program gets the same plan
/// digest. Output is deterministic: the same input gives identical programs.
llvm::Expected<TranspileResult> transpile(const proto::Program &main, const proto::Program &startup,
                                          const DistributeConfig &config);

/// The trainer's main program: forward and backward, then split/send of each grad after its
/// last writer, barriers and recv/concat of each param (sync, async); GEO keeps the optimizer
/// and adds geo_sync.
llvm::Expected<proto::Program> buildTrainerProgram(const proto::Program &main,
                                                   const DistributePlan &plan);
/// The trainer's startup: the original minus what the pservers own, then recv of every param.
proto::Program buildTrainerStartup(const proto::Program &startup, const proto::Program &trainerMain,
                                   const DistributePlan &plan);
/// The program of endpoint `index`: listen_and_serv plus one optimize block per param block.
proto::Program buildPserverProgram(const proto::Program &main, const DistributePlan &plan,
                                   size_t index);
/// Initialises exactly endpoint `index`'s blocks with the single-machine startup's values.
llvm::Expected<proto::Program> buildPserverStartup(const proto::Program &startup,
                                                   const proto::Program &main,
                                                   const DistributePlan &plan, size_t index);

/// Writes trainer.pb, trainer.startup.pb, pserver.<i>.pb, pserver.<i>.startup.pb and plan.txt
/// (and .pbtxt forms with `text`) into `dir`.
llvm::Error writeTranspiled(const TranspileResult &r, llvm::StringRef dir, bool text,
                            llvm::StringRef origin);

/// Records the job in a program's DistributeInfo.
void setDistInfo(proto::Program &prog, const DistributePlan &plan, llvm::StringRef role,
                 int64_t pserverIndex);

} // namespace oar
