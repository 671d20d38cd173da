// What a pserver program's listen_and_serv says: where it serves, the job it serves, and which
// optimize block applies each gradient.
#pragma once

#include <set>
#include <string>

#include "ir/distributed_mode.h"
#include "ops/op_registry.h"
#include "runtime/wire/protocol.h"
#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

struct PserverPlan {
  std::string endpoint;
  Mode mode = Mode::Sync;
  int64_t fanin = 1;                 ///< the job's trainers
  std::string digest;                ///< the plan's digest: trainers of another plan are refused
  llvm::StringMap<int> gradToBlock;  ///< gradient -> the optimize block that applies it
  std::set<std::string> paramBlocks; ///< the params this pserver serves
  llvm::StringMap<ops::VarType> declared; ///< block 0's vars

  /// Reads block 0's listen_and_serv and vars. Errors name what is malformed.
  static llvm::Expected<PserverPlan> read(const proto::Program &program);

  /// Every gradient's declared type.
  llvm::StringMap<ops::VarType> gradTypes() const;
  /// The bytes of the largest gradient a trainer may send.
  int64_t largestGradientBytes() const;
  /// Checks a var payload against the declared var it is written to.
  llvm::Error checkPayload(const Message &m, llvm::StringRef var) const;
};

} // namespace oar::runtime
