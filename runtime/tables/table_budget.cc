// Splitting a pserver's table memory budget into a row limit per table.
#include "runtime/tables/table_budget.h"

#include "support/error.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

namespace oar::runtime {

std::string TableBudget::describe() const {
  return llvm::formatv("a {0} MB budget ({1} when a table is full)", bytes >> 20,
                       whenFull == TableFull::Evict ? "evicting the least recently pushed rows"
                                                    : "refusing new keys")
      .str();
}

/// The buckets a DenseMap holds `entries` in: a power of two, at least 64, kept under 3/4 full.
static uint64_t bucketsFor(uint64_t entries) {
  uint64_t b = 64;
  while (entries * 4 >= b * 3)
    b *= 2;
  return b;
}

size_t tableBytesAtMost(const SparseTableConfig &c, int64_t rows) {
  uint64_t n = static_cast<uint64_t>(rows);
  uint64_t chunkRows = SparseTable::kChunkRows;
  uint64_t stride = static_cast<uint64_t>(rowFloats(c));
  uint64_t bytes = (n + chunkRows - 1) / chunkRows * chunkRows * stride * sizeof(float);
  // A rehash holds the old buckets beside the new ones (at most twice the final size).
  uint64_t bucket = sizeof(llvm::detail::DenseMapPair<uint64_t, uint32_t>);
  uint64_t index = 2 * bucketsFor(n) * bucket;
  bytes += index;
  // The by-row vectors double as they grow: at most 1.5x their final capacity each, at once.
  uint64_t capacity = llvm::PowerOf2Ceil(std::max<uint64_t>(n, 1));
  bytes += 2 * (3 * capacity / 2) * sizeof(uint32_t); // lastPush_, pushes_
  bytes += (3 * capacity / 2) * sizeof(uint32_t);     // freeRows_
  bytes += n * sizeof(uint32_t);                      // an eviction's list of steps
  if (c.evictAfter > 0)
    bytes += n * sizeof(uint64_t); // endStep's stale keys
  if (c.admitAfter > 1)
    bytes += index; // the admission counters: as many as rows
  return bytes;
}

llvm::Expected<int64_t> rowsPerTable(const TableBudget &budget,
                                     const std::vector<SparseTableConfig> &tables) {
  auto fits = [&](int64_t rows) {
    uint64_t total = 0;
    for (const SparseTableConfig &c : tables)
      total += tableBytesAtMost(c, rows);
    return total <= static_cast<uint64_t>(budget.bytes);
  };
  int64_t least = SparseTable::kChunkRows;
  if (!fits(least)) {
    uint64_t need = 0;
    for (const SparseTableConfig &c : tables)
      need += tableBytesAtMost(c, least);
    return makeError("--table-memory-mb {0} cannot hold {1} rows of each of this pserver's {2} "
                     "distributed tables; give at least {3}",
                     budget.bytes >> 20, least, tables.size(), (need >> 20) + 1);
  }
  // LLVM 14's DenseMap counts buckets in `unsigned`: past 2^30 buckets its growth check
  // overflows. 3/4 of 2^30 rows a table is the most it can index.
  int64_t lo = least, hi = (int64_t(3) << 28) - 1;
  while (lo < hi) { // the largest that fits, in [lo, hi]
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid))
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

} // namespace oar::runtime
