// SelectedRows operations, and the Scope's SelectedRows storage.
#include "executor/selected_rows.h"

#include <cstring>

#include "support/error.h"
#include "llvm/ADT/DenseMap.h"

namespace oar {

SelectedRows *Scope::findRows(llvm::StringRef name) {
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : it->second.get();
}

const SelectedRows *Scope::findRows(llvm::StringRef name) const {
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : it->second.get();
}

SelectedRows &Scope::getRows(llvm::StringRef name) {
  vars_.erase(name);
  std::shared_ptr<SelectedRows> &sr = rows_[name];
  if (!sr)
    sr = std::make_shared<SelectedRows>();
  return *sr;
}

int64_t SelectedRows::rowWidth() const { return oar::rowWidth(values); }

llvm::SmallVector<int64_t, 4> SelectedRows::denseDims() const {
  llvm::SmallVector<int64_t, 4> dims{height};
  if (values.rank() > 1)
    dims.append(values.dims().begin() + 1, values.dims().end());
  return dims;
}

llvm::Error checkRows(const SelectedRows &sr, llvm::StringRef what) {
  if (!sr.initialized() || sr.values.rank() < 1 ||
      sr.values.dim(0) != static_cast<int64_t>(sr.rows.size()))
    return makeError("{0}: selected rows hold {1} ids but values {2}{3}; they must have one row "
                     "per id",
                     what, sr.rows.size(), dtypeName(sr.dtype()), dimsString(sr.values.dims()));
  for (size_t i = 0; i < sr.rows.size(); ++i)
    if (sr.rows[i] < 0 || sr.rows[i] >= sr.height)
      return makeError("{0}: row id {1} at position {2} is outside the height {3}; ids must lie "
                       "in [0, {3})",
                       what, sr.rows[i], i, sr.height);
  return llvm::Error::success();
}

// Rows are copied and added as elements of T; only float dtypes carry gradients.
template <typename T> static void mergeRowsOf(const SelectedRows &in, SelectedRows &out) {
  const int64_t width = in.rowWidth();
  // One hash lookup per id: the first pass notes each position's row in out.
  llvm::DenseMap<int64_t, int64_t> slot; // id -> its row in out
  slot.reserve(in.rows.size());
  std::vector<int64_t> ids, rowOf(in.rows.size());
  std::vector<bool> first(in.rows.size(), false);
  for (size_t i = 0; i < in.rows.size(); ++i) {
    auto [it, fresh] = slot.try_emplace(in.rows[i], static_cast<int64_t>(ids.size()));
    if (fresh)
      ids.push_back(in.rows[i]);
    rowOf[i] = it->second;
    first[i] = fresh;
  }
  llvm::SmallVector<int64_t, 4> dims(in.values.dims().begin(), in.values.dims().end());
  dims[0] = static_cast<int64_t>(ids.size());
  out.height = in.height;
  out.values.resize(in.dtype(), dims, /*zero=*/false); // every row is written first below
  const T *src = in.values.data<T>();
  T *dst = out.values.data<T>();
  for (size_t i = 0; i < in.rows.size(); ++i) {
    T *row = dst + rowOf[i] * width;
    if (first[i]) { // copy the first so a lone row stays bit-identical
      std::memcpy(row, src + i * width, width * sizeof(T));
      continue;
    }
    for (int64_t j = 0; j < width; ++j)
      row[j] += src[i * width + j];
  }
  out.rows = std::move(ids);
}

void mergeRows(const SelectedRows &in, SelectedRows &out) {
  assert(&in != &out && "mergeRows needs a separate output");
  if (in.dtype() == proto::F64)
    return mergeRowsOf<double>(in, out);
  assert(in.dtype() == proto::F32 && "selected rows hold f32 or f64 values");
  mergeRowsOf<float>(in, out);
}

void concatRows(llvm::ArrayRef<const SelectedRows *> in, SelectedRows &out) {
  assert(!in.empty() && "concatRows needs an input");
  SelectedRows acc; // out may be an input
  acc.height = in[0]->height;
  llvm::SmallVector<int64_t, 4> dims(in[0]->values.dims().begin(), in[0]->values.dims().end());
  dims[0] = 0;
  for (const SelectedRows *sr : in) {
    acc.rows.insert(acc.rows.end(), sr->rows.begin(), sr->rows.end());
    dims[0] += sr->values.dim(0);
  }
  acc.values.resize(in[0]->dtype(), dims, /*zero=*/false);
  auto *dst = static_cast<std::byte *>(acc.values.raw());
  for (const SelectedRows *sr : in) {
    std::memcpy(dst, sr->values.raw(), sr->values.bytes());
    dst += sr->values.bytes();
  }
  out = std::move(acc);
}

template <typename T> static void addRowsOf(const SelectedRows &sr, Tensor &dense) {
  const int64_t width = sr.rowWidth();
  const T *src = sr.values.data<T>();
  T *dst = dense.data<T>();
  for (size_t i = 0; i < sr.rows.size(); ++i) {
    T *row = dst + sr.rows[i] * width;
    for (int64_t j = 0; j < width; ++j)
      row[j] += src[i * width + j];
  }
}

void addRowsTo(const SelectedRows &sr, Tensor &dense) {
  assert(dense.dtype() == sr.dtype() && dense.numel() == sr.height * sr.rowWidth() &&
         "addRowsTo needs the dense tensor selected rows stand for");
  if (sr.dtype() == proto::F64)
    return addRowsOf<double>(sr, dense);
  assert(sr.dtype() == proto::F32 && "selected rows hold f32 or f64 values");
  addRowsOf<float>(sr, dense);
}

Tensor toDense(const SelectedRows &sr) {
  Tensor t(sr.dtype(), sr.denseDims());
  addRowsTo(sr, t);
  return t;
}

} // namespace oar
