// The DistributeTranspiler: a single-machine program -> trainer and pserver programs.
#pragma once

#include "transpiler/plan.h"
#include "llvm/ADT/DenseMap.h"

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

/// What every program of one transpilation reads, computed once rather than once per program:
/// the plan's digest (a hash over every block, recorded in every program) and name indexes of
/// the single-machine programs. Holds references: `main`, `startup` and `plan` must outlive it
/// and stay unchanged, as the index keys view names inside `main` and `startup`.
struct TranspileInputs {
  TranspileInputs(const proto::Program &main, const proto::Program &startup,
                  const DistributePlan &plan);
  const proto::Program &main, &startup;
  const DistributePlan &plan;
  /// plan.digest().
  std::string digest;
  /// The vars of main's block 0 by name.
  llvm::DenseMap<llvm::StringRef, const proto::Var *> mainVars;
  /// The first op of startup's block 0 that writes each var.
  llvm::DenseMap<llvm::StringRef, const proto::Op *> startupWriters;
};

/// The trainer's main program: forward and backward, then split/send of each grad after its
/// last writer, barriers and recv/concat of each param (sync, async); GEO keeps the optimizer
/// and adds geo_sync.
llvm::Expected<proto::Program> buildTrainerProgram(const TranspileInputs &in);
/// The trainer's startup: the original minus what the pservers own, then recv of every param.
proto::Program buildTrainerStartup(const TranspileInputs &in, const proto::Program &trainerMain);
/// The program of endpoint `index`: listen_and_serv plus one optimize block per param block.
proto::Program buildPserverProgram(const TranspileInputs &in, size_t index);
/// Initialises exactly endpoint `index`'s blocks with the single-machine startup's values.
llvm::Expected<proto::Program> buildPserverStartup(const TranspileInputs &in, size_t index);

/// Writes trainer.pb, trainer.startup.pb, pserver.<i>.pb, pserver.<i>.startup.pb and plan.txt
/// (and .pbtxt forms with `text`) into `dir`.
llvm::Error writeTranspiled(const TranspileResult &r, llvm::StringRef dir, bool text,
                            llvm::StringRef origin);

/// Records the job in a program's DistributeInfo.
void setDistInfo(proto::Program &prog, const TranspileInputs &in, llvm::StringRef role,
                 int64_t pserverIndex);

} // namespace oar
