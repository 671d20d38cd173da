// Rows of a distributed table: made on first push, updated in place.
#include "runtime/tables/sparse_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/tables/sparse_routing.h"
#include "support/error.h"

namespace oar::runtime {

SparseTable::SparseTable(SparseTableConfig config)
    : config_(std::move(config)), stride_(rowFloats(config_)), init_(rowInit()),
      tableSeed_(init_.streamSeed()) {}

/// A uniform float in [0, 1) from 24 bits of a hash.
static float unit(uint64_t h) { return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); }

RowInit SparseTable::rowInit() const {
  return RowInit{config_.init, config_.initA, config_.initB, config_.seed, config_.name};
}

void SparseTable::initialWeights(uint64_t key, float *out) const {
  init_.weightsFrom(tableSeed_, key, config_.width, out);
}

float *SparseTable::rowOf(uint64_t key) {
  if (config_.maxRows > 0 && freeRows_.empty() && used_ >= config_.maxRows &&
      !index_.count(key)) { // full: room first (an eviction would drop a new key's entry)
    if (config_.whenFull == TableFull::Refuse) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
    evictLeastRecent();
  }
  uint32_t r = freeRows_.empty() ? used_ : freeRows_.back();
  auto [it, fresh] = index_.try_emplace(key, r);
  if (!fresh) {
    r = it->second;
    lastPush_[r] = step_;
    ++pushes_[r];
    return rowAt(r);
  }
  if (freeRows_.empty()) {
    if (r / kChunkRows >= chunks_.size())
      chunks_.push_back(std::make_unique<float[]>(static_cast<size_t>(kChunkRows) * stride_));
    ++used_;
    lastPush_.push_back(step_);
    pushes_.push_back(1);
  } else {
    freeRows_.pop_back();
    lastPush_[r] = step_;
    pushes_[r] = 1;
  }
  float *row = rowAt(r);
  initialWeights(key, row);
  float *state = row + config_.width;
  std::fill(state, row + stride_, config_.optimizer == "adagrad" ? config_.initialAccumulator : 0.0f);
  if (config_.optimizer == "adam") { // beta^t starts at beta (Paddle's convention)
    state[2 * config_.width] = config_.beta1;
    state[2 * config_.width + 1] = config_.beta2;
  }
  return row;
}

bool SparseTable::admit(uint64_t key) {
  if (config_.admitProbability < 1.0f &&
      unit(mixKey(tableSeed_ ^ mixKey(key ^ 0x5bd1e995ull))) >= config_.admitProbability)
    return false;
  if (config_.admitAfter <= 1)
    return true;
  if (config_.maxRows > 0 && pushCounts_.size() >= static_cast<size_t>(config_.maxRows) &&
      !pushCounts_.count(key))
    forgetCounters();
  uint32_t &count = pushCounts_[key];
  if (static_cast<int64_t>(++count) < config_.admitAfter)
    return false;
  pushCounts_.erase(key);
  return true;
}

// Least recent by the step of the last push; ties (a burst within one step) go in the index's
// order, which depends only on the keys pushed, so runs repeat. A quarter at a time: each
// eviction scans every row, so a burst of new keys pays for it once per quarter of the table.
void SparseTable::evictLeastRecent() {
  size_t n = std::max<size_t>(1, index_.size() / 4);
  std::vector<uint32_t> steps;
  steps.reserve(index_.size());
  for (const auto &[key, r] : index_)
    steps.push_back(lastPush_[r]);
  std::nth_element(steps.begin(), steps.begin() + (n - 1), steps.end());
  uint32_t cutoff = steps[n - 1];
  size_t tiesToGo = n;
  for (uint32_t s : steps)
    tiesToGo -= s < cutoff;
  steps = {};
  // The survivors move to a new index: erasing would leave a tombstone a row, and a full table's
  // lookups probed through them (seconds a step).
  llvm::DenseMap<uint64_t, uint32_t, TableKeyInfo> kept;
  kept.reserve(index_.size() - n);
  for (const auto &[key, r] : index_) {
    bool evict = lastPush_[r] < cutoff || (lastPush_[r] == cutoff && tiesToGo > 0);
    if (!evict) {
      kept.try_emplace(key, r);
      continue;
    }
    tiesToGo -= lastPush_[r] == cutoff;
    freeRows_.push_back(r);
  }
  index_ = std::move(kept);
  // Taken from the back: new rows then fill memory in order.
  std::sort(freeRows_.begin(), freeRows_.end(), std::greater<uint32_t>());
  evictedForRoom_.fetch_add(n, std::memory_order_relaxed);
}

// Most keys of a long tail are pushed once: dropping their counters frees the room and keeps the
// counts of keys on their way to admission.
void SparseTable::forgetCounters() {
  size_t before = pushCounts_.size();
  for (auto it = pushCounts_.begin(); it != pushCounts_.end();) {
    auto here = it++;
    if (here->second <= 1)
      pushCounts_.erase(here); // a tombstone: the other iterators stay valid
  }
  if (pushCounts_.size() > before / 2)
    pushCounts_.clear();
  countersForgotten_.fetch_add(before - pushCounts_.size(), std::memory_order_relaxed);
}

size_t SparseTable::endStep() {
  ++step_;
  if (config_.evictAfter <= 0 || step_ % config_.evictAfter != 0)
    return 0;
  std::vector<uint64_t> stale;
  for (const auto &[key, r] : index_)
    if (step_ - lastPush_[r] >= config_.evictAfter)
      stale.push_back(key);
  for (uint64_t key : stale) {
    auto it = index_.find(key);
    freeRows_.push_back(it->second);
    index_.erase(it);
  }
  return stale.size();
}

void SparseTable::pull(llvm::ArrayRef<uint64_t> keys, float *out) const {
  int64_t w = config_.width;
  for (size_t k = 0; k < keys.size(); ++k) {
    float *dst = out + k * w;
    auto it = index_.find(keys[k]);
    if (it == index_.end()) {
      initialWeights(keys[k], dst);
      continue;
    }
    std::memcpy(dst, rowAt(it->second), w * sizeof(float));
  }
}

// The arithmetic per element is the dense and sparse kernels' (optimizers.cc,
// sparse_optimizers.cc), so a row updated here gets the same bits as there for the same grad.
void SparseTable::update(float *p, const float *g, float lr, float scale) const {
  int64_t w = config_.width;
  float *state = p + w;
  const float wd = config_.weightDecay;
  if (config_.optimizer == "sgd") {
    for (int64_t j = 0; j < w; ++j)
      p[j] = p[j] - lr * (g[j] * scale + wd * p[j]);
  } else if (config_.optimizer == "adagrad" && config_.rowWise) {
    float squares = 0;
    for (int64_t j = 0; j < w; ++j) {
      float gj = g[j] * scale + wd * p[j];
      squares += gj * gj;
    }
    state[0] = state[0] + squares / static_cast<float>(w);
    float denom = std::sqrt(state[0]) + config_.epsilon;
    for (int64_t j = 0; j < w; ++j)
      p[j] = p[j] - lr * (g[j] * scale + wd * p[j]) / denom;
  } else if (config_.optimizer == "adagrad") {
    for (int64_t j = 0; j < w; ++j) {
      float gj = g[j] * scale + wd * p[j];
      state[j] = state[j] + gj * gj;
      p[j] = p[j] - lr * gj / (std::sqrt(state[j]) + config_.epsilon);
    }
  } else { // adam, lazy: this row's own beta^t
    float b1 = config_.beta1, b2 = config_.beta2, eps = config_.epsilon;
    float *m1 = state, *m2 = state + w, &b1p = state[2 * w], &b2p = state[2 * w + 1];
    float lrT = lr * std::sqrt(1.0f - b2p) / (1.0f - b1p);
    float epsT = eps * std::sqrt(1.0f - b2p);
    for (int64_t j = 0; j < w; ++j) {
      float gj = g[j] * scale + wd * p[j];
      m1[j] = b1 * m1[j] + (1.0f - b1) * gj;
      m2[j] = b2 * m2[j] + (1.0f - b2) * gj * gj;
      p[j] = p[j] - lrT * m1[j] / (std::sqrt(m2[j]) + epsT);
    }
    b1p *= b1;
    b2p *= b2;
  }
}

void SparseTable::push(llvm::ArrayRef<uint64_t> keys, const float *grads, float lr, float scale) {
  bool filtered = config_.admitAfter > 1 || config_.admitProbability < 1.0f;
  for (size_t k = 0; k < keys.size(); ++k) {
    if (filtered && !index_.count(keys[k]) && !admit(keys[k]))
      continue; // not admitted (yet): its row stays at the initial weights
    if (float *row = rowOf(keys[k]))
      update(row, grads + k * config_.width, lr, scale);
  }
}

void SparseTable::readRow(uint64_t key, float *out) const {
  std::memcpy(out, rowAt(index_.find(key)->second), stride_ * sizeof(float));
}

void SparseTable::setRow(uint64_t key, const float *row, const RowStats *stats) {
  float *dst = rowOf(key); // a loaded row without stats counts as pushed once, now
  if (!dst)
    return;
  std::memcpy(dst, row, stride_ * sizeof(float));
  if (stats) {
    uint32_t r = index_.find(key)->second;
    pushes_[r] = static_cast<uint32_t>(std::min<uint64_t>(stats->pushes, UINT32_MAX));
    // Steps count from this table's start: a row last pushed `stepsAgo` steps before the save.
    lastPush_[r] = step_ - static_cast<uint32_t>(std::min<uint64_t>(stats->stepsAgo, step_));
  }
}

void SparseTable::setWeights(uint64_t key, const float *weights, const RowStats *stats) {
  std::vector<float> row(static_cast<size_t>(stride_), 0.0f);
  std::memcpy(row.data(), weights, config_.width * sizeof(float));
  if (config_.optimizer == "adam") { // a new row's beta^t (see rowOf)
    row[config_.width + 2 * config_.width] = config_.beta1;
    row[config_.width + 2 * config_.width + 1] = config_.beta2;
  }
  setRow(key, row.data(), stats);
}

RowStats SparseTable::rowStats(uint64_t key) const {
  uint32_t r = index_.find(key)->second;
  return RowStats{pushes_[r], step_ - lastPush_[r]};
}

size_t SparseTable::bytesHeld() const {
  return chunks_.size() * static_cast<size_t>(kChunkRows) * stride_ * sizeof(float) +
         index_.getMemorySize() + pushCounts_.getMemorySize() +
         (lastPush_.capacity() + pushes_.capacity()) * sizeof(uint32_t) +
         freeRows_.capacity() * sizeof(uint32_t);
}

} // namespace oar::runtime
