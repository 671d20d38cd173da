// From a cell's text to a row's value, as the schema says.
#include "feed/schema_columns.h"

#include <charconv>
#include <cmath>

#include "feed/feature_key.h"
#include "feed/schema.h"
#include "feed/transforms.h"
#include "support/error.h"

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

/// signedLog1p(v), looked up for the small counts most log1p columns hold (log1p took a seventh
/// of a slot file's parse time); the table holds signedLog1p's own values, so the bits agree.
double log1pOf(double v) {
  constexpr int kCached = 4096;
  static const std::vector<double> table = [] {
    std::vector<double> t(kCached);
    for (int i = 0; i < kCached; ++i)
      t[i] = signedLog1p(i);
    return t;
  }();
  if (!std::signbit(v) && v < kCached && v == static_cast<double>(static_cast<int>(v)))
    return table[static_cast<int>(v)];
  return signedLog1p(v);
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
  for (const proto::FeedColumn &c : schema.dense())
    if (c.auto_stats() || c.auto_buckets() > 0)
      return makeError("dense column {0}: its {1} are not computed yet; oar-model computes them "
                       "from the training data (--data), or give them (standardize:MEAN:STD, "
                       "bucketize:B1:B2...)",
                       c.name(), c.auto_stats() ? "mean and std" : "bucket boundaries");
  SchemaColumns s;
  s.classes_ = labelClasses(schema);
  s.realLabel_ = schema.label_kind() == "real";
  s.roles_.push_back({ColumnRole::Label, 0, schema.label(), {}, 0});
  for (const proto::FeedColumn &c : schema.sparse())
    if (c.max_values() == 0)
      s.roles_.push_back({ColumnRole::Sparse, s.slots_++, c.name(), c, columnHash(c.name())});
  for (const proto::FeedColumn &c : schema.dense())
    if (c.transform() == "bucketize")
      s.roles_.push_back({ColumnRole::Bucketized, s.slots_++, c.name(), c, columnHash(c.name())});
    else
      s.roles_.push_back({ColumnRole::Dense, s.denseWidth_++, c.name(), c, 0});
  for (const proto::FeedColumn &c : schema.sparse()) // multi-valued columns' keys come last
    if (c.max_values() > 0) {
      ColumnRole role{ColumnRole::Multi, s.slots_, c.name(), c, columnHash(c.name())};
      role.width = c.max_values();
      role.mean = c.pooling() == "mean";
      if (!c.separator().empty())
        role.separator = c.separator()[0];
      s.slots_ += role.width;
      s.weighted_ = true;
      s.roles_.push_back(std::move(role));
    }
  std::vector<KeySection> sections = keySections(schema);
  for (bool multi : {false, true})
    for (const proto::FeedCross &x : schema.cross()) {
      if (crossIsMulti(schema, x) != multi)
        continue;
      ColumnRole role{ColumnRole::Cross, s.slots_, x.name(), {}, columnHash(x.name())};
      role.width = crossWidth(schema, x);
      for (const std::string &part : x.columns()) {
        auto at = llvm::find_if(s.roles_, [&](const ColumnRole &r) { return r.name == part; });
        if (at->kind == ColumnRole::Multi)
          role.multiPart = static_cast<int64_t>(role.parts.size());
        role.parts.push_back(at - s.roles_.begin());
      }
      s.slots_ += role.width;
      s.hasCrosses_ = true;
      s.roles_.push_back(std::move(role));
    }
  s.positive_ = schema.label_positive(), s.negative_ = schema.label_negative();
  for (size_t i = 0; i < s.roles_.size(); ++i) {
    ColumnRole &role = s.roles_[i];
    s.byName_[role.name] = i;
    role.missingKey = featureKeyFrom(role.hash, "");
    role.boundaries.assign(role.column.boundaries().begin(), role.column.boundaries().end());
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
  if (!positive_.empty()) {
    if (cell == positive_ || (!negative_.empty() && cell == negative_) ||
        (negative_.empty() && !cell.empty())) {
      label = cell == positive_ ? 1.0f : 0.0f;
      return llvm::Error::success();
    }
    return makeError("label {0} is \"{1}\"; it must be {2}", roles_[0].name, cell,
                     negative_.empty() ? "a value (" + positive_ + " is 1, any other 0)"
                                       : positive_ + " (1) or " + negative_ + " (0)");
  }
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
    if (!role.column.integer_ids()) { // most ids: hashed as they are, nothing to check
      rows.keys(r)[role.index] = featureKeyFrom(role.hash, cell);
      return llvm::Error::success();
    }
    auto key = keyOf(role, cell);
    if (!key)
      return key.takeError();
    rows.keys(r)[role.index] = *key;
    return llvm::Error::success();
  }
  case ColumnRole::Multi: {
    int64_t count = 0;
    if (!cell.empty())
      for (llvm::StringRef rest = cell;;) {
        auto [value, tail] = rest.split(role.separator);
        if (llvm::Error err = addValue(role, value, rows, r, count))
          return err;
        if (value.size() == rest.size())
          break;
        rest = tail;
      }
    finishValues(role, count, rows, r);
    return llvm::Error::success();
  }
  case ColumnRole::Cross: // computed by finishRow, never read from a cell
    return llvm::Error::success();
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
    rows.keys(r)[role.index] = integerKeyFrom(role.hash, bucketOf(role.boundaries, v));
    return llvm::Error::success();
  }
  if (role.transform == ColumnRole::Log1p)
    v = log1pOf(v);
  else if (role.transform == ColumnRole::Standardize)
    v = (v - c.mean()) / c.std();
  rows.dense(r)[role.index] = static_cast<float>(v);
  return llvm::Error::success();
}

llvm::Expected<uint64_t> SchemaColumns::keyOf(const ColumnRole &role, llvm::StringRef value) const {
  if (!role.column.integer_ids() || value.empty())
    return featureKeyFrom(role.hash, value);
  int64_t id;
  if (!parseInteger(value, id))
    return makeError("column {0} is \"{1}\"; its ids are integers (declared int)", role.name,
                     value);
  return integerKeyFrom(role.hash, id);
}

llvm::Error SchemaColumns::addValue(const ColumnRole &role, llvm::StringRef value, FeedRows &rows,
                                    int64_t r, int64_t &count) const {
  if (count >= role.width)
    return makeError("column {0} has more than {1} values; it holds at most {1} (declared multi "
                     "{1})",
                     role.name, role.width);
  auto key = keyOf(role, value);
  if (!key)
    return key.takeError();
  rows.keys(r)[role.index + count++] = *key;
  return llvm::Error::success();
}

void SchemaColumns::finishValues(const ColumnRole &role, int64_t count, FeedRows &rows,
                                 int64_t r) const {
  // Each value counts once in a sum, 1/count in a mean; padding counts nothing (its key, the
  // column's missing one, is looked up and weighed by 0).
  float weight = count == 0 ? 0.0f : role.mean ? 1.0f / static_cast<float>(count) : 1.0f;
  uint64_t padding = role.missingKey;
  for (int64_t k = 0; k < role.width; ++k) {
    if (k >= count)
      rows.keys(r)[role.index + k] = padding;
    rows.weights(r)[role.index + k] = k < count ? weight : 0.0f;
  }
}

llvm::Error SchemaColumns::finishLine(llvm::ArrayRef<int64_t> values, FeedRows &rows,
                                      int64_t r) const {
  for (size_t i = 0; i < roles_.size(); ++i) {
    const ColumnRole &role = roles_[i];
    if (role.kind == ColumnRole::Multi)
      finishValues(role, values[i], rows, r);
    else if (values[i] == 0 && role.kind == ColumnRole::Label && !labelOptional_)
      return makeError("the line has no label {0}", role.name);
    else if (role.kind == ColumnRole::Label)
      continue; // an optional label not given reads 0
    else if (values[i] == 0)
      setMissing(role, rows, r);
  }
  return llvm::Error::success();
}

void SchemaColumns::finishRow(FeedRows &rows, int64_t r) const {
  if (!hasCrosses_)
    return;
  uint64_t *keys = rows.keys(r);
  llvm::SmallVector<uint64_t, 8> parts;
  for (const ColumnRole &cross : roles_) {
    if (cross.kind != ColumnRole::Cross)
      continue;
    for (int64_t k = 0; k < cross.width; ++k) {
      parts.clear();
      const ColumnRole *multi = nullptr;
      for (size_t p = 0; p < cross.parts.size(); ++p) {
        const ColumnRole &part = roles_[cross.parts[p]];
        if (static_cast<int64_t>(p) == cross.multiPart)
          multi = &part;
        parts.push_back(keys[part.index + (multi == &part ? k : 0)]);
      }
      // A multi-valued cross has a key per value of its multi-valued column, weighed as that
      // value; that column's padding is the cross's padding.
      if (multi && rows.weights(r)[multi->index + k] == 0) {
        keys[cross.index + k] = cross.missingKey;
        rows.weights(r)[cross.index + k] = 0;
        continue;
      }
      keys[cross.index + k] = crossKeyFrom(cross.hash, parts);
      if (multi)
        rows.weights(r)[cross.index + k] = rows.weights(r)[multi->index + k];
    }
  }
}

void SchemaColumns::setMissing(const ColumnRole &role, FeedRows &rows, int64_t r) const {
  if (role.kind == ColumnRole::Multi)
    return finishValues(role, 0, rows, r);
  if (role.kind == ColumnRole::Cross)
    return;
  if (role.kind == ColumnRole::Dense)
    rows.dense(r)[role.index] = missingDense_; // 0 after any transform: a standardized mean
  else if (role.kind != ColumnRole::Label)
    rows.keys(r)[role.index] = role.missingKey; // a key of its own
}

} // namespace oar
