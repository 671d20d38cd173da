// What a pserver's distributed tables may hold (--table-memory-mb, --table-full): the options a
// node is started with, apart from the tables themselves (table_budget.h sizes them).
#pragma once

#include <cstdint>
#include <string>

namespace oar::runtime {

/// What a table that holds its most rows does with a key that has none: drop the least recently
/// pushed rows to make room, or give the key no row (its pushes are dropped and counted).
enum class TableFull { Evict, Refuse };

struct TableBudget {
  int64_t bytes = 0; ///< 0: no limit
  TableFull whenFull = TableFull::Evict;
  bool limited() const { return bytes > 0; }
  /// "a 200 MB budget (evicting the least recently pushed rows when a table is full)".
  std::string describe() const;
};

} // namespace oar::runtime
