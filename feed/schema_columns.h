// A schema turned into what a parser needs per cell: where each named column goes in a row
// (the label, a slot of the dense row, a slot of the key row) and how its text becomes a value.
#pragma once

#include "feed/feed_rows.h"
#include "ir/program.h"
#include "llvm/ADT/StringMap.h"

namespace oar {

/// Where one schema column goes.
struct ColumnRole {
  enum Kind { Label, Dense, Sparse, Bucketized, Multi, Cross } kind;
  int64_t index = 0; ///< into the row's dense values or keys (a multi-valued column's first)
  std::string name;
  proto::FeedColumn column; ///< its transform (dense) or whether its ids are integers (sparse)
  uint64_t hash = 0;        ///< columnHash(name), for sparse and bucketized columns
  uint64_t missingKey = 0;  ///< featureKeyFrom(hash, ""): an empty cell's key, and padding's
  /// A bucketized column's boundaries as f32, as the bucketize op holds them, so the feed and the
  /// op put a value in the same bucket.
  std::vector<float> boundaries;
  enum Transform { None, Log1p, Standardize } transform = None; ///< of a dense column
  int64_t width = 1;    ///< keys: max_values for a multi-valued column
  bool mean = false;    ///< a multi-valued column averaged (else summed)
  char separator = '|'; ///< between a multi-valued csv cell's values
  /// A cross's columns, as indices into roles(), in the cross's order; `multiPart` the one
  /// multi-valued among them (or -1), whose weights the cross's keys take.
  std::vector<size_t> parts;
  int64_t multiPart = -1;
};

class SchemaColumns {
public:
  /// Checks the schema (checkSchema) and lays its columns out.
  static llvm::Expected<SchemaColumns> make(const proto::FeedSchema &schema);

  /// The role of the column named `name`, or null when the schema does not use it.
  const ColumnRole *find(llvm::StringRef name) const;
  const std::vector<ColumnRole> &roles() const { return roles_; }
  int64_t denseWidth() const { return denseWidth_; }
  /// Keys a row: one per single-valued or bucketized column, max_values per multi-valued one.
  int64_t slots() const { return slots_; }
  /// Whether rows carry a weight per key (the schema has multi-valued columns).
  bool weighted() const { return weighted_; }

  /// Sets row `r`'s value of `role` from a cell's text (empty: missing). Errors say what is
  /// wrong with the value; the caller adds file:line.
  llvm::Error setCell(const ColumnRole &role, llvm::StringRef cell, FeedRows &rows,
                      int64_t r) const;
  /// A column the line does not have at all (a slot file's missing slot): as an empty cell.
  void setMissing(const ColumnRole &role, FeedRows &rows, int64_t r) const;

  /// A multi-valued column's values one at a time (a slot named again on a line): the value's
  /// key goes to position `count`, which then counts it; finishValues() weighs them and pads the
  /// rest of the column's keys. Errors say what is wrong with the value.
  llvm::Error addValue(const ColumnRole &role, llvm::StringRef value, FeedRows &rows, int64_t r,
                       int64_t &count) const;
  void finishValues(const ColumnRole &role, int64_t count, FeedRows &rows, int64_t r) const;
  /// The end of a line of named values (slot, libffm, libsvm), `values[i]` the values role i
  /// got: multi-valued columns finished, columns the line lacks missing, a lacking label an error.
  llvm::Error finishLine(llvm::ArrayRef<int64_t> values, FeedRows &rows, int64_t r) const;
  /// After a row's columns are all set: its crosses' keys (and weights) from their columns'.
  void finishRow(FeedRows &rows, int64_t r) const;
  bool hasCrosses() const { return hasCrosses_; }

  /// What a missing dense cell reads as (0 by default: after standardize, the mean). The
  /// statistics pass sets NaN to leave missing cells out.
  void setMissingDense(float value) { missingDense_ = value; }
  /// Rows to predict may lack the label (a csv header without it, a slot line without it): it
  /// reads 0.
  void setLabelOptional(bool optional) { labelOptional_ = optional; }
  bool labelOptional() const { return labelOptional_; }

private:
  llvm::Error setLabel(llvm::StringRef cell, float &label) const;
  llvm::Expected<uint64_t> keyOf(const ColumnRole &role, llvm::StringRef value) const;
  std::vector<ColumnRole> roles_;
  llvm::StringMap<size_t> byName_;
  int64_t denseWidth_ = 0, slots_ = 0, classes_ = 0;
  bool realLabel_ = false, weighted_ = false, hasCrosses_ = false, labelOptional_ = false;
  std::string positive_, negative_; ///< a label given by value
  float missingDense_ = 0;
};

} // namespace oar
