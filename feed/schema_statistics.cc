// One streaming pass over a schema feed's files: the auto statistics, and the keys counted.
#include "feed/schema_statistics.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "feed/line_format.h"
#include "feed/line_reader.h"
#include "feed/schema.h"
#include "support/error.h"
#include "support/hash.h"
#include "llvm/ADT/StringMap.h"

namespace oar {

namespace {

/// One dense column's running mean and variance (Welford) and its quantile sample.
struct ColumnAccumulator {
  int64_t count = 0;
  double mean = 0, m2 = 0;
  std::vector<double> sample;
  std::mt19937_64 rng{0x5eed};

  void add(double v) {
    ++count;
    double delta = v - mean;
    mean += delta / static_cast<double>(count);
    m2 += delta * (v - mean);
    if (static_cast<int64_t>(sample.size()) < kQuantileSample) {
      sample.push_back(v);
    } else { // reservoir: each value kept with probability kQuantileSample / count
      uint64_t at = rng() % static_cast<uint64_t>(count);
      if (at < static_cast<uint64_t>(kQuantileSample))
        sample[at] = v;
    }
  }
};

/// Linear counting (Whang et al.): the share of a bitmap's bits no key hashed to estimates how
/// many distinct keys there were, accurate to about 1% well past ten million keys in 8 MiB.
class DistinctCounter {
public:
  void add(uint64_t key) {
    uint64_t bit = mixKey(key ^ 0x243f6a8885a308d3ULL) & (kBits - 1);
    bits_[bit >> 6] |= uint64_t(1) << (bit & 63);
  }
  int64_t estimate() const {
    int64_t zeros = 0;
    for (uint64_t w : bits_)
      zeros += 64 - __builtin_popcountll(w);
    if (zeros == 0)
      return kBits * 8; // saturated: "many"
    return static_cast<int64_t>(std::llround(-double(kBits) * std::log(double(zeros) / kBits)));
  }

private:
  static constexpr int64_t kBits = int64_t(1) << 26;
  std::vector<uint64_t> bits_ = std::vector<uint64_t>(kBits / 64);
};

/// A cross of auto-bucketized columns in the statistics pass: the keys of what is left of it
/// (the cross of its other columns, or the one column left) counted apart.
struct ReducedCross {
  int64_t factor = 1;  ///< the product of its auto columns' bucket counts
  std::string counted; ///< the cross or column whose keys are counted ("": none left)
  bool ownCross = false; ///< `counted` is a cross of the pass's own, whose keys the model lacks
  int64_t slot = -1, width = 1;
  DistinctCounter keys;
};

} // namespace

double quantileOf(llvm::ArrayRef<double> sorted, double q) {
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  if (lo + 1 >= sorted.size())
    return sorted.back();
  return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * (pos - static_cast<double>(lo));
}

llvm::Expected<DataStatistics> computeSchemaStatistics(proto::FeedSchema &schema,
                                                       llvm::StringRef format,
                                                       llvm::ArrayRef<std::string> files) {
  // The pass reads auto columns as plain values (missing ones as NaN, left out); their
  // transforms are what it computes.
  proto::FeedSchema plain = schema;
  std::vector<int> autoColumns; // indices into schema.dense()
  for (int i = 0; i < plain.dense_size(); ++i) {
    proto::FeedColumn &c = *plain.mutable_dense(i);
    if (!c.auto_stats() && c.auto_buckets() == 0)
      continue;
    autoColumns.push_back(i);
    c.clear_transform(), c.clear_auto_stats(), c.clear_auto_buckets();
  }
  // A cross of an auto-bucketized column cannot be keyed before its buckets exist: the pass
  // crosses its other columns instead (or reads the one left), counts those keys apart, and
  // bounds the cross's keys by that count times the buckets.
  std::vector<ReducedCross> reduced;
  {
    llvm::StringMap<int64_t> buckets;
    for (const proto::FeedColumn &c : schema.dense())
      if (c.auto_buckets() > 0)
        buckets[c.name()] = c.auto_buckets();
    google::protobuf::RepeatedPtrField<proto::FeedCross> kept;
    for (const proto::FeedCross &x : plain.cross()) {
      ReducedCross r;
      proto::FeedCross rest = x;
      rest.clear_columns();
      for (const std::string &part : x.columns())
        if (auto it = buckets.find(part); it != buckets.end())
          r.factor *= it->second;
        else
          rest.add_columns(part);
      if (r.factor == 1) {
        *kept.Add() = x;
        continue;
      }
      if (rest.columns_size() >= 2) {
        rest.set_name("stats pass: " + x.name());
        r.counted = rest.name(), r.ownCross = true;
        *kept.Add() = rest;
      } else if (rest.columns_size() == 1) {
        r.counted = rest.columns(0);
      }
      reduced.push_back(std::move(r));
    }
    plain.mutable_cross()->Swap(&kept);
  }
  auto columns = SchemaColumns::make(plain);
  if (!columns)
    return columns.takeError();
  columns->setMissingDense(std::nanf(""));
  std::vector<int64_t> denseIndex; // of each auto column, in the rows' dense values
  for (int i : autoColumns)
    denseIndex.push_back(columns->find(plain.dense(i).name())->index);
  for (ReducedCross &r : reduced)
    if (const ColumnRole *role = r.counted.empty() ? nullptr : columns->find(r.counted))
      r.slot = role->index, r.width = role->width;
  std::vector<ColumnAccumulator> acc(autoColumns.size());
  DistinctCounter distinct;
  DataStatistics stats;
  FeedRows rows(columns->denseWidth(), columns->slots(), columns->weighted());
  for (const std::string &path : files) {
    auto format_ = makeLineFormat(format, *columns);
    if (!format_)
      return format_.takeError();
    LineReader reader;
    if (llvm::Error err = reader.open(path))
      return err;
    llvm::StringRef line;
    for (int64_t lineNo = 1;; ++lineNo) {
      auto got = reader.next(line);
      if (!got)
        return got.takeError();
      if (!*got)
        break;
      if (lineNo == 1 && (*format_)->hasHeader()) {
        if (llvm::Error err = (*format_)->readHeader(line))
          return makeError("{0}:1: {1}", path, llvm::toString(std::move(err)));
        continue;
      }
      if (line.trim().empty())
        continue;
      rows.clear();
      int64_t r = rows.add();
      if (llvm::Error err = (*format_)->parse(line, rows, r))
        return makeError("{0}:{1}: {2}", path, lineNo, llvm::toString(std::move(err)));
      ++stats.rows;
      for (size_t a = 0; a < acc.size(); ++a)
        if (float v = rows.dense(r)[denseIndex[a]]; !std::isnan(v))
          acc[a].add(v);
      const uint64_t *keys = rows.keys(r);
      for (int64_t k = 0; k < rows.slots(); ++k)
        distinct.add(keys[k]);
      for (ReducedCross &x : reduced)
        for (int64_t k = 0; k < x.width && x.slot >= 0; ++k)
          x.keys.add(keys[x.slot + k]);
    }
  }
  for (size_t a = 0; a < acc.size(); ++a) {
    proto::FeedColumn &c = *schema.mutable_dense(autoColumns[a]);
    ColumnAccumulator &col = acc[a];
    if (col.count == 0)
      return makeError("dense column {0}: no value in the training data ({1} rows) to compute its "
                       "{2} from",
                       c.name(), stats.rows, c.auto_stats() ? "mean and std" : "buckets");
    if (c.auto_stats()) {
      double stdev = std::sqrt(col.m2 / static_cast<double>(col.count));
      if (!(stdev > 0))
        return makeError("dense column {0}: every value in the training data is {1}; "
                         "standardize divides by the std (drop the column, or give "
                         "standardize:MEAN:STD)",
                         c.name(), col.mean);
      c.set_mean(col.mean), c.set_std(stdev), c.clear_auto_stats();
      continue;
    }
    std::sort(col.sample.begin(), col.sample.end());
    int64_t n = c.auto_buckets();
    for (int64_t i = 1; i < n; ++i) {
      // Rounded to f32 as the feed and the bucketize op compare in it; a repeat (a value that
      // many rows share) would be an empty bucket, and is dropped.
      float b = static_cast<float>(quantileOf(col.sample, double(i) / double(n)));
      if (c.boundaries_size() == 0 || b > c.boundaries(c.boundaries_size() - 1))
        c.add_boundaries(b);
    }
    c.clear_auto_buckets();
  }
  // A bucketized auto column's keys were counted as one (its values were read plain): its
  // buckets add at most a key each.
  stats.distinctKeys = distinct.estimate();
  for (ReducedCross &x : reduced) {
    // The reduced cross's own keys were counted above, and are no keys of the model.
    int64_t own = x.slot >= 0 ? x.keys.estimate() : 1;
    if (x.ownCross)
      stats.distinctKeys -= own;
    stats.distinctKeys += std::min(own * x.factor, stats.rows * x.width);
  }
  for (const proto::FeedColumn &c : schema.dense())
    stats.distinctKeys += c.transform() == "bucketize" ? c.boundaries_size() + 1 : 0;
  return stats;
}

} // namespace oar
