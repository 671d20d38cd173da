// The DistributeTranspiler: a single-machine program -> trainer and pserver programs.
#pragma once

#include <memory>
#include <mutex>

#include "google/protobuf/arena.h"
#include "ir/node_role.h"
#include "transpiler/plan.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

namespace oar {

class TranspileResult;
struct TranspileState;

/// Rewrites `main` + `startup` (unchanged) for `config` by running the passes of
/// transpilePasses() (transpiler/passes.h). Every program gets the same plan digest. Output is
/// deterministic: the same input gives identical programs.
llvm::Expected<TranspileResult> transpile(const proto::Program &main, const proto::Program &startup,
                                          const DistributeConfig &config);

/// Everything one transpilation writes. The programs live on arenas the result owns, one per
/// parallel job of transpile(), so building them allocates by bumping a pointer and freeing
/// them frees a few large blocks. A caller that needs a proto::Program of its own copies one.
/// Movable; the programs stay where they are, so references to them live as long as the
/// result that holds them. A default-constructed result holds none, to be assigned to.
class TranspileResult {
public:
  DistributePlan plan;

  const proto::Program &trainer() const { return *trainer_; }
  const proto::Program &trainerStartup() const { return *trainerStartup_; }
  size_t numPservers() const { return pservers_.size(); }
  /// Endpoint `index`'s main and startup programs.
  const proto::Program &pserver(size_t index) const { return *pservers_[index]; }
  const proto::Program &pserverStartup(size_t index) const { return *pserverStartups_[index]; }

private:
  friend llvm::Error programsPass(TranspileState &state);   // builds the programs
  friend llvm::Error collectivePass(TranspileState &state); // ... in collective mode

  std::vector<std::unique_ptr<google::protobuf::Arena>> arenas_;
  proto::Program *trainer_ = nullptr, *trainerStartup_ = nullptr; // on arenas_
  std::vector<proto::Program *> pservers_, pserverStartups_;      // by endpoint index
};

/// What every program of one transpilation reads, computed once rather than once per program:
/// the plan's digest (a hash over every block, recorded in every program) and name indexes of
/// the single-machine programs. Holds references: `main`, `startup` and `plan` must outlive it
/// and stay unchanged, as the index keys view names inside `main` and `startup`.
struct TranspileInputs {
  /// `jobHash` is jobHash(main, startup).
  TranspileInputs(const proto::Program &main, const proto::Program &startup,
                  const DistributePlan &plan, uint64_t jobHash);
  const proto::Program &main, &startup;
  const DistributePlan &plan;
  const uint64_t jobHash;
  struct Digests {
    /// jobDigest(plan, jobHash, true): what every program records as its plan_digest.
    std::string plan;
    /// The same without the pservers' endpoints: names the job's checkpoints, which a relaunch
    /// on other ports resumes from.
    std::string checkpoint;
  };
  /// The digests, computed by the first caller (the others wait for it). Each writes out every
  /// block of the plan: programsPass computes them as one of its parallel jobs, and builders
  /// ask for them at their end.
  const Digests &digests() const;
  /// The vars of main's block 0 by name.
  llvm::DenseMap<llvm::StringRef, const proto::Var *> mainVars;
  /// The first op of startup's block 0 that writes each var.
  llvm::DenseMap<llvm::StringRef, const proto::Op *> startupWriters;
  /// A param's blocks that one endpoint holds.
  struct LocalParam {
    const ParamPlan *param;
    llvm::SmallVector<const VarBlock *, 2> blocks; // in block order
  };
  /// By endpoint index, the params with blocks there, in plan order: each pserver's builders
  /// walk their own blocks, not all blocks of the plan once per endpoint.
  std::vector<std::vector<LocalParam>> paramsOn;

private:
  mutable std::once_flag digestsOnce_;
  mutable Digests digests_;
};

// Each builder writes its program into `out`, an empty program that may live on an arena.

/// The trainer's main program: forward and backward, then split/send of each grad after its
/// last writer, barriers and recv/concat of each param (sync, async); GEO keeps the optimizer
/// and adds geo_sync.
llvm::Error buildTrainerProgram(const TranspileInputs &in, proto::Program &out);
/// The trainer's startup: the original minus what the pservers own, then recv of every param.
void buildTrainerStartup(const TranspileInputs &in, const proto::Program &trainerMain,
                         proto::Program &out);
/// The program of endpoint `index`: listen_and_serv plus one optimize block per param block.
void buildPserverProgram(const TranspileInputs &in, size_t index, proto::Program &out);
/// Initialises exactly endpoint `index`'s blocks with the single-machine startup's values.
llvm::Error buildPserverStartup(const TranspileInputs &in, size_t index, proto::Program &out);

// GEO (geo_program.cc).

/// The GEO trainer: all of main's ops (it trains locally) and geo_sync, which every k steps sends
/// (param - synced)/trainers per block and rebases the params on the pservers' values.
void buildGeoTrainerProgram(const TranspileInputs &in, proto::Program &out);
/// The trainer startup's last synced copy of `p`, starting as the received param.
void appendGeoSyncedCopy(proto::Block &block, VarTable &vars, const ParamPlan &p);
/// A GEO pserver's optimize block of `b`: the trainers' deltas added into the block. Returns its
/// grad_to_block_id entry.
std::string appendGeoDeltaBlock(const ParamPlan &p, const VarBlock &b, proto::Block &sub,
                                VarTable &vars);

/// Writes trainer.pb, trainer.startup.pb, pserver.<i>.pb, pserver.<i>.startup.pb and plan.txt
/// (and .pbtxt forms with `text`) into `dir`.
llvm::Error writeTranspiled(const TranspileResult &r, llvm::StringRef dir, bool text,
                            llvm::StringRef origin);

/// Records the job in a program's DistributeInfo.
void setDistInfo(proto::Program &prog, const TranspileInputs &in, Role role,
                 int64_t pserverIndex);

} // namespace oar
