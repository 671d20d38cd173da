// Rows of a streamed feed held flat: one label, `denseWidth` floats and `slots` keys a row, and
// with `weighted` a weight per key (multi-valued slots: a key's share of its slot). The streaming
// sources keep their shuffle buffer and their batch in it.
#pragma once

#include <cstdint>
#include <algorithm>
#include <vector>

namespace oar {

class FeedRows {
public:
  FeedRows(int64_t denseWidth = 0, int64_t slots = 0, bool weighted = false)
      : dense_(denseWidth), slots_(slots), weightWidth_(weighted ? slots : 0) {}
  int64_t size() const { return static_cast<int64_t>(labels_.size()); }
  int64_t denseWidth() const { return dense_; }
  int64_t slots() const { return slots_; }

  /// Appends a row of zeros (weights of 1); returns its index.
  int64_t add() {
    labels_.push_back(0);
    values_.resize(values_.size() + dense_);
    keys_.resize(keys_.size() + slots_);
    weights_.resize(weights_.size() + weightWidth_, 1.0f);
    return size() - 1;
  }
  float *weights(int64_t r) { return weights_.data() + r * weightWidth_; }
  const float *weights(int64_t r) const { return weights_.data() + r * weightWidth_; }
  float &label(int64_t r) { return labels_[r]; }
  float *dense(int64_t r) { return values_.data() + r * dense_; }
  uint64_t *keys(int64_t r) { return keys_.data() + r * slots_; }
  float label(int64_t r) const { return labels_[r]; }
  const float *dense(int64_t r) const { return values_.data() + r * dense_; }
  const uint64_t *keys(int64_t r) const { return keys_.data() + r * slots_; }

  /// Appends row `r` of `from` (of the same widths).
  void append(const FeedRows &from, int64_t r) {
    int64_t to = add();
    labels_[to] = from.labels_[r];
    std::copy_n(from.dense(r), dense_, dense(to));
    std::copy_n(from.keys(r), slots_, keys(to));
    std::copy_n(from.weights(r), weightWidth_, weights(to));
  }
  /// Moves the last row into row `r` and drops the last (an unordered remove).
  void removeSwapLast(int64_t r) {
    int64_t last = size() - 1;
    if (r != last) {
      labels_[r] = labels_[last];
      std::copy_n(dense(last), dense_, dense(r));
      std::copy_n(keys(last), slots_, keys(r));
      std::copy_n(weights(last), weightWidth_, weights(r));
    }
    labels_.pop_back();
    values_.resize(values_.size() - dense_);
    keys_.resize(keys_.size() - slots_);
    weights_.resize(weights_.size() - weightWidth_);
  }
  void clear() {
    labels_.clear();
    values_.clear();
    keys_.clear();
    weights_.clear();
  }

private:
  int64_t dense_, slots_, weightWidth_;
  std::vector<float> labels_, values_, weights_;
  std::vector<uint64_t> keys_;
};

} // namespace oar
