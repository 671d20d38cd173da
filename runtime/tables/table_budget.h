// A pserver's memory budget for its distributed tables (--table-memory-mb): how many rows each
// table may hold so that all of them, their indexes and admission counters fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tables/sparse_table.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// The most bytes a table of `config` holds with at most `rows` rows (and as many admission
/// counters), counting the copies its index and vectors hold while they grow.
size_t tableBytesAtMost(const SparseTableConfig &config, int64_t rows);

/// The largest row count every table of `tables` may hold so that together they stay within
/// `budget`; an error naming the budget when it cannot hold one chunk of rows of each.
llvm::Expected<int64_t> rowsPerTable(const TableBudget &budget,
                                     const std::vector<SparseTableConfig> &tables);

} // namespace oar::runtime
