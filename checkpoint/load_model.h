// Loading a checkpoint of any layout into a single-machine program's vars, and the rule every
// loader applies to optimizer state.
#pragma once

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/table_files.h"

namespace oar {

/// What a load set, for the node's log line and the state rule.
struct LoadReport {
  std::vector<std::string> loaded;       ///< vars set from the checkpoint
  std::vector<std::string> stateFound;   ///< optimizer state vars (or tables' state) it held
  std::vector<std::string> stateMissing; ///< optimizer state vars it held nothing for
  int64_t tableRows = 0;
  /// "loaded N vars (and R table rows) from WHAT", and, when training goes on, a second
  /// sentence if the optimizer's state starts fresh.
  std::string summary(const CheckpointReader &ckpt, bool training) const;
};

/// The optimizer's state of a var: the update op's type, the slot and the param it updates.
struct StateVar {
  std::string opType, slot, param;
};
/// Every optimizer state var of `block` (the inputs of its OPTIMIZE ops other than Param, Grad
/// and LearningRate), by name.
std::map<std::string, StateVar> optimizerStateVars(const proto::Block &block);

/// The TableInfo a loader wants for var `table` of a single-machine program: its width, the
/// optimizer that updates it and how its rows start (the startup's initialiser).
TableInfo wantedTable(const proto::Program &main, const proto::Program &startup,
                      llvm::StringRef table);

/// Sets every persistable var of `main` that `ckpt` holds, in `scope` (which ran `startup`).
/// Each parameter must be there, dense or as a table (a table's keys fill its rows; the rows
/// it lacks start as a table's rows do); other vars are taken when present. Errors name the var
/// and the checkpoint.
llvm::Expected<LoadReport> loadSingleMachine(const proto::Program &main,
                                             const proto::Program &startup, Scope &scope,
                                             const CheckpointReader &ckpt);

/// The rule for optimizer state: a checkpoint that holds some of what the program's optimizer
/// keeps must hold all of it when training goes on (`training`); one that holds none (an export,
/// a params-only save) starts the optimizer fresh, which summary() says.
llvm::Error checkStateComplete(const LoadReport &report, const CheckpointReader &ckpt,
                               bool training);

} // namespace oar
