// The transpiler's passes: each one step of turning a single-machine program into a job's
// programs, run in order from one list (LLVM's pass pipeline is the model).
#pragma once

#include <optional>

#include "transpiler/transpiler.h"

namespace oar {

/// What the passes of one transpilation share: each reads what the earlier ones wrote.
struct TranspileState {
  TranspileState(const proto::Program &main, const proto::Program &startup,
                 const DistributeConfig &config)
      : main(main), startup(startup), config(config) {}
  const proto::Program &main, &startup; ///< the single-machine programs, never changed
  const DistributeConfig &config;
  /// main as the passes that rewrite it left it; unset while none has.
  std::optional<proto::Program> rewritten;
  std::vector<TablePlan> tables; ///< what the distributed-table pass took out of main
  TranspileResult result;        ///< the plan (slice), then the programs (programs)
  uint64_t jobHash = 0;          ///< jobHash(main, startup), computed beside the slicing
  /// The single-machine program the later passes read.
  const proto::Program &source() const { return rewritten ? *rewritten : main; }
};

struct TranspilePass {
  const char *name;
  llvm::Error (*run)(TranspileState &state);
};

/// The passes transpile() runs, in order:
///  - collective (collective_program.cc): in collective mode, the whole job: the trainer's
///    programs with one all-reduce of the gradients; the passes below do nothing then;
///  - distributed-table (distributed_table_pass.cc): lookups of is_distributed tables become
///    pulls and pushes of the rows a batch touches; the tables join the plan;
///  - slice (plan.cc): params cut into blocks, each placed on an endpoint;
///  - programs (transpiler.cc): the trainer's and every endpoint's programs, built as parallel
///    jobs: send/recv insertion (trainer_program.cc), optimize blocks (pserver_program.cc), and
///    GEO's local training and delta blocks instead in GEO mode (geo_program.cc).
llvm::ArrayRef<TranspilePass> transpilePasses();

llvm::Error collectivePass(TranspileState &state);
llvm::Error distributedTablePass(TranspileState &state);
llvm::Error slicePass(TranspileState &state);
llvm::Error programsPass(TranspileState &state);

} // namespace oar
