// Distributed tables in checkpoints: a pserver's rows of a table as one part of the saved table
// (checkpoint/table_files.h), and the rows a pserver owns read back from a checkpoint of any
// layout, whatever number of pservers (or one machine) wrote it.
#pragma once

#include "checkpoint/load_model.h"
#include "checkpoint/table_rows.h"
#include "runtime/tables/sparse_routing.h"
#include "runtime/tables/sparse_table.h"

namespace oar::runtime {

/// What table.txt says of `table`.
TableInfo tableInfoOf(const SparseTable &table);

/// The rows `table` holds, sorted by key: keys, values (weights and state) and stats. A copy:
/// the table may change while the copy is written.
TableRows snapshotRows(const SparseTable &table);

/// Stages `rows` of `table` as part `index` of `count` under `tablesDir`/<table>/, after
/// removing parts of another count there (a save replaces the last one).
llvm::Error stageTablePart(const TableInfo &info, const TableRows &rows, llvm::StringRef tablesDir,
                           int64_t index, int64_t count, SaveSet &files);

/// Sets the rows of `table` that pserver `index` owns under `routing` from `ckpt` (parts of a
/// distributed save, or the dense var one machine trained). `stateVars` names the dense
/// optimizer's vars by slot, for the state of rows read from a dense var. With `ownPartOnly`,
/// a save by as many pservers needs only part `index` (a pserver's own checkpoint). Counts go to
/// `report`; an error names a table the checkpoint holds in neither form.
llvm::Error loadTable(SparseTable &table, const CheckpointReader &ckpt,
                      const std::map<std::string, std::string> &stateVars,
                      const SparseRouting &routing, int64_t index, bool ownPartOnly,
                      LoadReport &report);

} // namespace oar::runtime
