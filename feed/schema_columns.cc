// From a cell's text to a row's value, as the schema says.
#include "feed/schema_columns.h"

#include <charconv>
#include <cmath>

#include "feed/feature_key.h"
#include "feed/schema.h"
#include "ir/error.h"

namespace oar {

namespace {

/// The whole cell as a finite number; false for anything else ("12a", "nan", "").
bool parseNumber(llvm::StringRef cell, double &v) {
  const char *end = cell.data() + cell.size();
  int64_t i; // most counts are integers, and reading one is three times as fast
  if (auto [at, ec] = std::from_chars(cell.data(), end, i); ec == std::errc() && at == end) {
    v = static_cast<double>(i);
    return true;
  }
  auto [at, ec] = std::from_chars(cell.data(), end, v);
  return ec == std::errc() && at == end && std::isfinite(v);
}

bool parseInteger(llvm::StringRef cell, int64_t &v) {
  const char *end = cell.data() + cell.size();
  auto [at, ec] = std::from_chars(cell.data(), end, v);
  return ec == std::errc() && at == end;
}

} // namespace

llvm::Expected<SchemaColumns> SchemaColumns::make(const proto::FeedSchema &schema) {
  if (llvm::Error err = checkSchema(schema))
    return err;
  SchemaColumns s;
  s.classes_ = labelClasses(schema);
  s.realLabel_ = schema.label_kind() == "real";
  s.roles_.push_back({ColumnRole::Label, 0, schema.label(), {}, 0});
  for (const proto::FeedColumn &c : schema.sparse())
    s.roles_.push_back({ColumnRole::Sparse, s.slots_++, c.name(), c, columnHash(c.name())});
  for (const proto::FeedColumn &c : schema.dense())
    if (c.transform() == "bucketize")
      s.roles_.push_back({ColumnRole::Bucketized, s.slots_++, c.name(), c, columnHash(c.name())});
    else
      s.roles_.push_back({ColumnRole::Dense, s.denseWidth_++, c.name(), c, 0});
  for (size_t i = 0; i < s.roles_.size(); ++i) {
    ColumnRole &role = s.roles_[i];
    s.byName_[role.name] = i;
    if (role.column.transform() == "log1p")
      role.transform = ColumnRole::Log1p;
    else if (role.column.transform() == "standardize")
      role.transform = ColumnRole::Standardize;
  }
  return s;
}

const ColumnRole *SchemaColumns::find(llvm::StringRef name) const {
  auto it = byName_.find(name);
  return it == byName_.end() ? nullptr : &roles_[it->second];
}

llvm::Error SchemaColumns::setLabel(llvm::StringRef cell, float &label) const {
  double v;
  if (!parseNumber(cell, v))
    return makeError("label {0} is \"{1}\"; it must be a number", roles_[0].name, cell);
  if (classes_ > 0 && (v != std::floor(v) || v < 0 || v >= double(classes_)))
    return makeError("label {0} is {1}; it must be a class index from 0 to {2}", roles_[0].name,
                     cell, classes_ - 1);
  if (classes_ == 0 && !realLabel_ && v != 0 && v != 1)
    return makeError("label {0} is {1}; a click label must be 0 or 1 (declare the label real or "
                     "classes N for other values)",
                     roles_[0].name, cell);
  label = static_cast<float>(v);
  return llvm::Error::success();
}

llvm::Error SchemaColumns::setCell(const ColumnRole &role, llvm::StringRef cell, FeedRows &rows,
                                   int64_t r) const {
  switch (role.kind) {
  case ColumnRole::Label:
    return setLabel(cell, rows.label(r));
  case ColumnRole::Sparse: {
    if (!role.column.integer_ids() || cell.empty()) {
      rows.keys(r)[role.index] = featureKeyFrom(role.hash, cell);
      return llvm::Error::success();
    }
    int64_t id;
    if (!parseInteger(cell, id))
      return makeError("column {0} is \"{1}\"; its ids are integers (declared int)", role.name,
                       cell);
    char text[24];
    auto [end, ec] = std::to_chars(text, text + sizeof text, id); // 012 and 12: one key
    rows.keys(r)[role.index] = featureKeyFrom(role.hash, llvm::StringRef(text, end - text));
    return llvm::Error::success();
  }
  case ColumnRole::Dense:
  case ColumnRole::Bucketized:
    break;
  }
  if (cell.empty()) {
    setMissing(role, rows, r);
    return llvm::Error::success();
  }
  double v;
  if (!parseNumber(cell, v))
    return makeError("column {0} is \"{1}\"; a dense column takes finite numbers or an empty cell",
                     role.name, cell);
  const proto::FeedColumn &c = role.column;
  if (role.kind == ColumnRole::Bucketized) {
    auto bucket = std::upper_bound(c.boundaries().begin(), c.boundaries().end(), v) -
                  c.boundaries().begin();
    rows.keys(r)[role.index] = featureKeyFrom(role.hash, std::to_string(bucket));
    return llvm::Error::success();
  }
  if (role.transform == ColumnRole::Log1p)
    v = std::copysign(std::log1p(std::abs(v)), v);
  else if (role.transform == ColumnRole::Standardize)
    v = (v - c.mean()) / c.std();
  rows.dense(r)[role.index] = static_cast<float>(v);
  return llvm::Error::success();
}

void SchemaColumns::setMissing(const ColumnRole &role, FeedRows &rows, int64_t r) const {
  if (role.kind == ColumnRole::Dense)
    rows.dense(r)[role.index] = 0; // after any transform: the mean, for standardized columns
  else if (role.kind != ColumnRole::Label)
    rows.keys(r)[role.index] = featureKeyFrom(role.hash, ""); // a key of its own
}

} // namespace oar
