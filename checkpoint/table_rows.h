// The rows of a saved table, read part by part for a loader: a pserver keeps the keys it owns,
// one machine puts every row into a dense tensor. Rows come from the table's parts or, for a
// table that one machine trained dense, from its [rows, width] var and the optimizer's vars.
#pragma once

#include "checkpoint/checkpoint_reader.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace oar {

/// One slot of an optimizer's state inside a table row: `floats` floats from `offset` (counted
/// from the end of the weights), and the dense var of that slot holds `floats` per row.
struct StateSlot {
  std::string slot; ///< the optimizer op's input slot (Moment, Moment1, Beta1Pow, ...)
  int64_t offset = 0, floats = 0;
};
/// The slots of `optimizer`'s row state for a table of `width` (sgd: none).
std::vector<StateSlot> tableStateSlots(llvm::StringRef optimizer, bool rowWise, int64_t width);

/// A row as the checkpoint holds it. `state` is null when the checkpoint has none in the layout
/// the loader wants; `stats` when it has none.
struct SavedRow {
  uint64_t key = 0;
  const float *weights = nullptr, *state = nullptr;
  const int64_t *stats = nullptr; ///< pushes, steps since the last push
};

/// Counts of what a read found.
struct TableReadCounts {
  int64_t rows = 0;
  bool state = false; ///< rows carried optimizer state in the wanted layout
};

/// Calls `fn` for every row of table `want.name` in `ckpt` whose key passes `keep`: from its
/// parts, or from the dense var of that name (keys 0..rows-1) with state from `stateVars` (the
/// dense optimizer vars by slot, empty for none). State is given when its layout is `want`'s
/// (optimizer, row_wise, width). None when the checkpoint holds the table in neither form;
/// errors name the file. `ownPart` (index, count): a loader that is part `index` of `count`
/// needs only that part of a save by `count` (a pserver reloading its own checkpoint, whose
/// directory holds its part alone).
llvm::Expected<std::optional<TableReadCounts>>
readTableRows(const CheckpointReader &ckpt, const TableInfo &want,
              const std::map<std::string, std::string> &stateVars,
              llvm::function_ref<bool(uint64_t)> keep,
              llvm::function_ref<llvm::Error(const SavedRow &)> fn,
              std::optional<std::pair<int64_t, int64_t>> ownPart = std::nullopt);

} // namespace oar
