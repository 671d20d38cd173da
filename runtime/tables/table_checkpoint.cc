// Saving and loading the rows of distributed tables.
#include "runtime/tables/table_checkpoint.h"

#include <algorithm>
#include <cstring>

#include "support/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

TableInfo tableInfoOf(const SparseTable &table) {
  const SparseTableConfig &c = table.config();
  TableInfo info;
  info.name = c.name;
  info.width = c.width;
  info.optimizer = c.optimizer;
  info.rowWise = c.rowWise;
  info.init = table.rowInit();
  info.step = table.step();
  return info;
}

TableRows snapshotRows(const SparseTable &table) {
  std::vector<uint64_t> keys;
  keys.reserve(table.rows());
  table.forEachRow([&](uint64_t key, const float *) { keys.push_back(key); });
  std::sort(keys.begin(), keys.end()); // the same rows give the same bytes
  auto n = static_cast<int64_t>(keys.size());
  int64_t stride = table.stride();
  TableRows rows;
  rows.keys = Tensor(proto::I64, {n});
  rows.values.resize(proto::F32, {n, stride}, /*zero=*/false);
  rows.stats.resize(proto::I64, {n, 2}, /*zero=*/false);
  if (n > 0) // an empty table's tensors have no memory to copy into
    std::memcpy(rows.keys.raw(), keys.data(), keys.size() * sizeof(uint64_t));
  for (int64_t i = 0; i < n; ++i) {
    table.readRow(keys[i], rows.values.data<float>() + i * stride);
    RowStats s = table.rowStats(keys[i]);
    rows.stats.data<int64_t>()[2 * i] = static_cast<int64_t>(s.pushes);
    rows.stats.data<int64_t>()[2 * i + 1] = static_cast<int64_t>(s.stepsAgo);
  }
  return rows;
}

llvm::Error stageTablePart(const TableInfo &info, const TableRows &rows, llvm::StringRef tablesDir,
                           int64_t index, int64_t count, SaveSet &files) {
  llvm::SmallString<256> dir(tablesDir);
  llvm::sys::path::append(dir, info.name);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  removeStaleTableParts(dir, count);
  return writeTablePart(info, rows, tablePartPrefix(dir, index, count), files);
}

llvm::Error loadTable(SparseTable &table, const CheckpointReader &ckpt,
                      const std::map<std::string, std::string> &stateVars,
                      const SparseRouting &routing, int64_t index, bool ownPartOnly,
                      LoadReport &report) {
  TableInfo want = tableInfoOf(table);
  int64_t width = table.width(), stride = table.stride();
  std::vector<float> row(static_cast<size_t>(stride));
  std::optional<std::pair<int64_t, int64_t>> ownPart;
  if (ownPartOnly)
    ownPart = std::make_pair(index, routing.numPservers);
  // The table's clock goes on from the save's, which its rows' stats count in.
  if (const std::vector<TablePartFiles> *parts = ckpt.tableParts(want.name);
      parts && !parts->empty()) {
    auto info = readTableInfo(parts->front());
    if (!info)
      return info.takeError();
    if (*info)
      table.setStep(static_cast<uint32_t>((*info)->step));
  }
  auto counts = readTableRows(
      ckpt, want, stateVars,
      [&](uint64_t key) { return !reservedKey(key) && routing.pserverOf(key) == index; },
      [&](const SavedRow &r) -> llvm::Error {
        RowStats stats;
        if (r.stats)
          stats = {static_cast<uint64_t>(std::max<int64_t>(r.stats[0], 0)),
                   static_cast<uint64_t>(std::max<int64_t>(r.stats[1], 0))};
        if (r.state) {
          std::memcpy(row.data(), r.weights, width * sizeof(float));
          std::memcpy(row.data() + width, r.state, (stride - width) * sizeof(float));
          table.setRow(r.key, row.data(), r.stats ? &stats : nullptr);
        } else {
          table.setWeights(r.key, r.weights, r.stats ? &stats : nullptr);
        }
        return llvm::Error::success();
      },
      ownPart);
  if (!counts)
    return counts.takeError();
  if (!*counts)
    return makeError("{0} holds nothing for table {1} (no tables/{1}/, no {1}.npy); was it saved "
                     "from this model?",
                     ckpt.describe(), want.name);
  report.loaded.push_back(want.name);
  report.tableRows += (*counts)->rows;
  if (want.stateFloats() > 0)
    ((*counts)->state ? report.stateFound : report.stateMissing)
        .push_back(want.name + " (its rows' optimizer state)");
  return llvm::Error::success();
}

} // namespace oar::runtime
