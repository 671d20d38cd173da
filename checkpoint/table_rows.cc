// Reading saved table rows in either form.
#include "checkpoint/table_rows.h"

#include <cstring>

#include "support/error.h"

namespace oar {

std::vector<StateSlot> tableStateSlots(llvm::StringRef optimizer, bool rowWise, int64_t width) {
  if (optimizer == "adagrad")
    return {{"Moment", 0, rowWise ? 1 : width}};
  if (optimizer == "adam")
    return {{"Moment1", 0, width},
            {"Moment2", width, width},
            {"Beta1Pow", 2 * width, 1},
            {"Beta2Pow", 2 * width + 1, 1}};
  return {};
}

/// Whether rows saved as `saved` carry state that `want` can take as it is.
static bool sameStateLayout(const TableInfo &saved, const TableInfo &want) {
  return saved.width == want.width && saved.optimizer == want.optimizer &&
         (saved.optimizer != "adagrad" || saved.rowWise == want.rowWise);
}

/// Rows from the table's parts.
static llvm::Expected<TableReadCounts>
readParts(const std::vector<TablePartFiles> &parts, const TableInfo &want,
          llvm::function_ref<bool(uint64_t)> keep,
          llvm::function_ref<llvm::Error(const SavedRow &)> fn) {
  TableReadCounts counts;
  counts.state = want.stateFloats() > 0;
  for (const TablePartFiles &files : parts) {
    auto part = readTablePart(files);
    if (!part)
      return part.takeError();
    const TableRows &rows = part->rows;
    // A legacy part has no description: its rows are taken to be the loader's own layout.
    TableInfo saved = part->info.value_or(want);
    int64_t stride = rows.values.dim(1);
    if (saved.width != want.width || stride != saved.stride())
      return makeError("{0}values.npy: rows of {1} floats ({2} weights) but table {3} has {4} "
                       "weights a row",
                       files.prefix, stride, saved.width, want.name, want.width);
    bool withState = want.stateFloats() > 0 && sameStateLayout(saved, want);
    counts.state &= withState;
    const auto *keys = static_cast<const uint64_t *>(rows.keys.raw());
    for (int64_t i = 0; i < rows.size(); ++i) {
      if (!keep(keys[i]))
        continue;
      const float *row = rows.values.data<float>() + i * stride;
      SavedRow r{keys[i], row, withState ? row + saved.width : nullptr,
                 rows.stats.initialized() ? rows.stats.data<int64_t>() + 2 * i : nullptr};
      if (llvm::Error err = fn(r))
        return err;
      ++counts.rows;
    }
  }
  return counts;
}

/// Rows from a table one machine trained dense: row k is key k.
static llvm::Expected<std::optional<TableReadCounts>>
readDense(const CheckpointReader &ckpt, const TableInfo &want,
          const std::map<std::string, std::string> &stateVars,
          llvm::function_ref<bool(uint64_t)> keep,
          llvm::function_ref<llvm::Error(const SavedRow &)> fn) {
  auto weights = ckpt.dense(want.name);
  if (!weights)
    return weights.takeError();
  if (!*weights)
    return std::optional<TableReadCounts>();
  const Tensor &w = **weights;
  if (w.dtype() != proto::F32 || w.rank() != 2 || w.dim(1) != want.width)
    return makeError("{0}: holds {1} as {2}{3}; table {1} needs f32[rows, {4}]", ckpt.describe(),
                     want.name, dtypeName(w.dtype()), dimsString(w.dims()), want.width);
  int64_t height = w.dim(0), stateFloats = want.stateFloats();
  // The state of each slot, as the dense optimizer kept it: floats per row must match.
  std::vector<std::pair<StateSlot, Tensor>> slots;
  for (const StateSlot &slot : tableStateSlots(want.optimizer, want.rowWise, want.width)) {
    auto var = stateVars.find(slot.slot);
    if (var == stateVars.end())
      break;
    auto t = ckpt.dense(var->second);
    if (!t)
      return t.takeError();
    if (!*t || (*t)->dtype() != proto::F32 || (*t)->rank() < 1 || (*t)->dim(0) != height ||
        (*t)->numel() != height * slot.floats)
      break;
    slots.emplace_back(slot, std::move(**t));
  }
  bool withState = stateFloats > 0 &&
                   slots.size() == tableStateSlots(want.optimizer, want.rowWise, want.width).size();
  TableReadCounts counts;
  counts.state = withState;
  std::vector<float> state(static_cast<size_t>(stateFloats));
  for (int64_t k = 0; k < height; ++k) {
    if (!keep(static_cast<uint64_t>(k)))
      continue;
    if (withState)
      for (auto &[slot, t] : slots)
        std::memcpy(state.data() + slot.offset, t.data<float>() + k * slot.floats,
                    slot.floats * sizeof(float));
    SavedRow r{static_cast<uint64_t>(k), w.data<float>() + k * want.width,
               withState ? state.data() : nullptr, nullptr};
    if (llvm::Error err = fn(r))
      return err;
    ++counts.rows;
  }
  return std::optional<TableReadCounts>(counts);
}

llvm::Expected<std::optional<TableReadCounts>>
readTableRows(const CheckpointReader &ckpt, const TableInfo &want,
              const std::map<std::string, std::string> &stateVars,
              llvm::function_ref<bool(uint64_t)> keep,
              llvm::function_ref<llvm::Error(const SavedRow &)> fn,
              std::optional<std::pair<int64_t, int64_t>> ownPart) {
  const std::vector<TablePartFiles> *found = ckpt.tableParts(want.name);
  if (!found)
    return readDense(ckpt, want, stateVars, keep, fn);
  std::vector<TablePartFiles> parts;
  if (ownPart && llvm::all_of(*found, [&](const TablePartFiles &p) {
        return !p.legacy && p.count == ownPart->second;
      })) {
    for (const TablePartFiles &p : *found)
      if (p.index == ownPart->first)
        parts.push_back(p);
    if (parts.empty())
      return makeError("{0}: table {1} misses part {2} of {3}", ckpt.describe(), want.name,
                       ownPart->first, ownPart->second);
  } else {
    if (llvm::Error err = checkTableParts(*found, want.name, ckpt.describe()))
      return err;
    parts = *found;
  }
  auto counts = readParts(parts, want, keep, fn);
  if (!counts)
    return counts.takeError();
  return std::optional<TableReadCounts>(*counts);
}

} // namespace oar
