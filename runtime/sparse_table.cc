// Rows of a distributed table: made on first push, updated in place.
#include "runtime/sparse_table.h"

#include <cmath>
#include <cstring>

#include "ir/error.h"
#include "runtime/sparse_routing.h"
#include "transpiler/plan.h"

namespace oar::runtime {

llvm::Error checkSparseOptimizer(llvm::StringRef optimizer) {
  if (optimizer == "sgd" || optimizer == "adagrad" || optimizer == "adam")
    return llvm::Error::success();
  return makeError("optimizer {0} cannot update a distributed table (known: sgd, adagrad, adam)",
                   optimizer);
}

static int64_t stateFloats(const SparseTableConfig &c) {
  if (c.optimizer == "adagrad")
    return c.rowWise ? 1 : c.width;
  if (c.optimizer == "adam")
    return 2 * c.width + 2;
  return 0;
}

SparseTable::SparseTable(SparseTableConfig config)
    : config_(std::move(config)), stride_(config_.width + stateFloats(config_)),
      tableSeed_(mixKey(static_cast<uint64_t>(config_.seed) ^ mixKey(fnv1a64(config_.name)))) {}

/// A uniform float in [0, 1) from 24 bits of a hash.
static float unit(uint64_t h) { return static_cast<float>(h >> 40) * (1.0f / 16777216.0f); }

void SparseTable::initialWeights(uint64_t key, float *out) const {
  uint64_t base = mixKey(tableSeed_ ^ mixKey(key));
  // Element j draws from its own counter: no element depends on another's draw.
  auto draw = [&](int64_t j) { return mixKey(base + 0x9e3779b97f4a7c15ull * (j + 1)); };
  const SparseTableConfig &c = config_;
  for (int64_t j = 0; j < c.width; ++j) {
    if (c.init == "constant") {
      out[j] = c.initA;
    } else if (c.init == "gaussian") { // Box-Muller on two draws of the element's stream
      uint64_t h = draw(j);
      float u1 = 1.0f - unit(h), u2 = unit(mixKey(h));
      out[j] =
          c.initA + c.initB * std::sqrt(-2.0f * std::log(u1)) * std::cos(6.2831853071795864f * u2);
    } else {
      out[j] = c.initA + (c.initB - c.initA) * unit(draw(j));
    }
  }
}

float *SparseTable::rowOf(uint64_t key) {
  uint32_t next = freeRows_.empty() ? used_ : freeRows_.back();
  auto [it, fresh] = index_.try_emplace(key, next);
  uint32_t r = it->second;
  if (!fresh) {
    lastPush_[r] = step_;
    return rowAt(r);
  }
  if (freeRows_.empty()) {
    if (r / kChunkRows >= chunks_.size())
      chunks_.push_back(std::make_unique<float[]>(static_cast<size_t>(kChunkRows) * stride_));
    ++used_;
    lastPush_.push_back(step_);
  } else {
    freeRows_.pop_back();
    lastPush_[r] = step_;
  }
  float *row = rowAt(r);
  initialWeights(key, row);
  float *state = row + config_.width;
  std::fill(state, row + stride_, 0.0f);
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
  uint32_t &count = pushCounts_[key];
  if (static_cast<int64_t>(++count) < config_.admitAfter)
    return false;
  pushCounts_.erase(key);
  return true;
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
  if (config_.optimizer == "sgd") {
    for (int64_t j = 0; j < w; ++j)
      p[j] = p[j] - lr * (g[j] * scale);
  } else if (config_.optimizer == "adagrad" && config_.rowWise) {
    float squares = 0;
    for (int64_t j = 0; j < w; ++j)
      squares += (g[j] * scale) * (g[j] * scale);
    state[0] = state[0] + squares / static_cast<float>(w);
    float denom = std::sqrt(state[0]) + config_.epsilon;
    for (int64_t j = 0; j < w; ++j)
      p[j] = p[j] - lr * (g[j] * scale) / denom;
  } else if (config_.optimizer == "adagrad") {
    for (int64_t j = 0; j < w; ++j) {
      float gj = g[j] * scale;
      state[j] = state[j] + gj * gj;
      p[j] = p[j] - lr * gj / (std::sqrt(state[j]) + config_.epsilon);
    }
  } else { // adam, lazy: this row's own beta^t
    float b1 = config_.beta1, b2 = config_.beta2, eps = config_.epsilon;
    float *m1 = state, *m2 = state + w, &b1p = state[2 * w], &b2p = state[2 * w + 1];
    float lrT = lr * std::sqrt(1.0f - b2p) / (1.0f - b1p);
    float epsT = eps * std::sqrt(1.0f - b2p);
    for (int64_t j = 0; j < w; ++j) {
      float gj = g[j] * scale;
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
    update(rowOf(keys[k]), grads + k * config_.width, lr, scale);
  }
}

void SparseTable::readRow(uint64_t key, float *out) const {
  std::memcpy(out, rowAt(index_.find(key)->second), stride_ * sizeof(float));
}

void SparseTable::setRow(uint64_t key, const float *row) {
  std::memcpy(rowOf(key), row, stride_ * sizeof(float)); // a loaded row counts as pushed now
}

size_t SparseTable::bytesHeld() const {
  return chunks_.size() * static_cast<size_t>(kChunkRows) * stride_ * sizeof(float) +
         index_.getMemorySize() + pushCounts_.getMemorySize() +
         lastPush_.capacity() * sizeof(uint32_t) + freeRows_.capacity() * sizeof(uint32_t);
}

} // namespace oar::runtime
