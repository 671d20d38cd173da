// SelectedRows: some rows of a tall tensor, e.g. the gradient of an embedding table.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/tensor.h"

namespace oar {

/// Rows of a dense [height, width...] tensor that is zero elsewhere: `values` row i holds the
/// row `rows[i]`. Ids may repeat (the dense tensor is then their sum) and keep the order they
/// were made in. A var of kind SELECTED_ROWS in the IR holds one of these in the Scope.
struct SelectedRows {
  int64_t height = 0;        ///< rows of the dense tensor it stands for
  std::vector<int64_t> rows; ///< row ids, each in [0, height)
  Tensor values;             ///< [rows.size(), width...]

  bool initialized() const { return values.initialized(); }
  DType dtype() const { return values.dtype(); }
  /// Elements per row (product of values' dims after the first).
  int64_t rowWidth() const;
  /// The dense tensor's dims: [height, values' dims after the first].
  llvm::SmallVector<int64_t, 4> denseDims() const;
};

/// Checks that values has one row per id and every id lies in [0, height). `what` names the
/// var and op in the error ("sgd: Grad (emb.w_0@GRAD)").
llvm::Error checkRows(const SelectedRows &sr, llvm::StringRef what);

/// `out` gets each distinct id of `in` once, in order of first appearance, with the sum of its
/// rows (added in `in`'s order). `out` must not be `in`.
void mergeRows(const SelectedRows &in, SelectedRows &out);
/// `out` gets the rows of every input, one after another (duplicates kept). `out` may be one of
/// the inputs.
void concatRows(llvm::ArrayRef<const SelectedRows *> in, SelectedRows &out);
/// dense[rows[i]] += values[i] for each i; `dense` must have the dense dims and dtype.
void addRowsTo(const SelectedRows &sr, Tensor &dense);
/// The dense tensor `sr` stands for.
Tensor toDense(const SelectedRows &sr);

} // namespace oar
