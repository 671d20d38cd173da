// The files of a saved sparse table: its rows in parts (one per pserver that held them), each part
// a sorted keys.npy, a values.npy and a stats.npy beside a table.txt that says what a row holds.
//
//   tables/<T>/part.<i>-of-<n>.keys.npy    i64 [rows]: the uint64 keys bit for bit, sorted
//   tables/<T>/part.<i>-of-<n>.values.npy  f32 [rows, stride]: the weights, then optimizer state
//   tables/<T>/part.<i>-of-<n>.stats.npy   i64 [rows, 2]: pushes, steps since the last push
//   tables/<T>/part.<i>-of-<n>.table.txt   the TableInfo (text)
//
// An export holds one part without a prefix (tables/<T>/keys.npy, values.npy, table.txt), its
// values the weights alone. Saves before this layout wrote one pair per virtual shard
// (shard.<s>.keys.npy, shard.<s>.values.npy, no table.txt); they still load.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/row_init.h"
#include "executor/save_set.h"
#include "executor/tensor.h"

namespace oar {

/// What a saved table's rows hold, and how the rows it does not hold start.
struct TableInfo {
  std::string name;
  int64_t width = 1;
  /// The optimizer whose state follows the weights in a row (sgd: none); empty for weights only
  /// (an export).
  std::string optimizer;
  bool rowWise = false; ///< adagrad: one accumulator per row
  RowInit init;
  uint64_t step = 0; ///< steps the table had ended when it was saved

  /// Floats of optimizer state per row, and floats per row in all.
  int64_t stateFloats() const;
  int64_t stride() const { return width + stateFloats(); }
  /// The table.txt text, and back; errors name `path` and the line.
  std::string text() const;
  static llvm::Expected<TableInfo> parse(llvm::StringRef text, llvm::StringRef path);
};

/// Floats of state per row for `optimizer` (sgd, adagrad, adam; "" for none) of `width`.
int64_t tableStateFloats(llvm::StringRef optimizer, bool rowWise, int64_t width);

/// Rows of one part: keys i64 [n] sorted, values f32 [n, stride], stats i64 [n, 2] (or none).
struct TableRows {
  Tensor keys, values, stats;
  int64_t size() const { return keys.initialized() ? keys.numel() : 0; }
};

/// One part's files: `prefix` + keys.npy, values.npy, stats.npy, table.txt.
struct TablePartFiles {
  std::string prefix;
  bool legacy = false; ///< a virtual shard of a save before parts (no table.txt, no stats)
  /// Part `index` of `count` (a legacy shard: its shard, count 0; an export's part: 0 of 1).
  int64_t index = 0, count = 1;
  std::string file(llvm::StringRef what) const { return prefix + what.str(); }
};

/// The prefix of part `index` of `count` under `tableDir`.
std::string tablePartPrefix(llvm::StringRef tableDir, int64_t index, int64_t count);

/// Stages part `index` of `count` of a table in `files` (values as float16 with `asF16`).
llvm::Error writeTablePart(const TableInfo &info, const TableRows &rows, llvm::StringRef prefix,
                           SaveSet &files, bool asF16 = false);

/// Removes from `tableDir` the files of parts of another count and of the legacy layout: what a
/// save by `count` pservers replaces. Parts of `count` are replaced by the save's own renames.
void removeStaleTableParts(llvm::StringRef tableDir, int64_t count);

/// Adds the parts found under `tableDir` (part files, legacy shards, or an export's single part)
/// to `parts`. A save spread over several directories (each pserver's checkpoint holds its own
/// part) is collected from each, then checked with checkTableParts.
llvm::Error collectTableParts(llvm::StringRef tableDir, std::vector<TablePartFiles> &parts);

/// Checks that `parts` (of table `table`, found under `where`) are one save's: all parts of one
/// count, or legacy shards alone. Errors name the missing part.
llvm::Error checkTableParts(const std::vector<TablePartFiles> &parts, llvm::StringRef table,
                            llvm::StringRef where);

/// Reads one part, checking that its files agree (rows, stride, stats) and that its keys are
/// sorted and distinct. `info` is none for a legacy part.
struct TablePart {
  std::optional<TableInfo> info;
  TableRows rows;
};
llvm::Expected<TablePart> readTablePart(const TablePartFiles &part);
/// The description (table.txt) of one part; none for a legacy part.
llvm::Expected<std::optional<TableInfo>> readTableInfo(const TablePartFiles &part);

} // namespace oar
