// Checkpoints of distributed tables: one pair of .npy files per virtual shard.
#pragma once

#include "executor/save_set.h"
#include "runtime/sparse_routing.h"
#include "runtime/sparse_table.h"

namespace oar::runtime {

/// Writes the rows of `table` held here under DIR/<table>/, per virtual shard s:
/// shard.<s>.keys.npy (i64 [n]: the uint64 keys bit for bit, sorted) and shard.<s>.values.npy
/// (f32 [n, stride]: weights, then optimizer state). NumPy reads both. The files join `files`,
/// whose commit puts them in place with the rest of the save.
llvm::Error saveTable(const SparseTable &table, const SparseRouting &routing, llvm::StringRef dir,
                      SaveSet &files);

/// Reads the shards of `table` that pserver `pserverIndex` owns under `routing` from
/// DIR/<table>/, whatever number of pservers wrote them. A shard without files has no rows.
llvm::Error loadTable(SparseTable &table, const SparseRouting &routing, int64_t pserverIndex,
                      llvm::StringRef dir);

} // namespace oar::runtime
