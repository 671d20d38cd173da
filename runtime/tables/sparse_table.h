// One pserver's rows of a distributed embedding table.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/row_init.h"
#include "checkpoint/table_files.h"
#include "runtime/tables/sparse_routing.h"
#include "runtime/tables/table_memory.h"
#include "support/hash.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// What a table is: its width, how a row starts and how it is updated. Read from the pserver
/// program's sparse_table op.
struct SparseTableConfig {
  std::string name;
  int64_t width = 1;
  /// sgd | adagrad | adam; adagrad with rowWise keeps one accumulator per row.
  std::string optimizer = "sgd";
  bool rowWise = false;
  float epsilon = 1e-6f, beta1 = 0.9f, beta2 = 0.999f;
  float initialAccumulator = 0; ///< adagrad: a new row's squared-gradient sum
  float weightDecay = 0; // L2, added to the gradient of each row a push touches
  /// How a row's weights start: uniform in [a, b), gaussian (mean a, std b), or constant a.
  std::string init = "uniform";
  float initA = -0.1f, initB = 0.1f;
  int64_t seed = 0;
  /// Admission: a key gets a row at its admitAfter-th push (the pushes before are dropped and
  /// only counted), and only if it is among the admitProbability share of keys picked by a hash
  /// of (seed, table, key): the same keys on any number of pservers.
  int64_t admitAfter = 1;
  float admitProbability = 1.0f;
  /// Eviction: endStep() drops rows no push touched in the last evictAfter steps (0: never).
  int64_t evictAfter = 0;
  /// Room (the table's share of the pserver's --table-memory-mb): at most maxRows rows and as
  /// many admission counters (0: no limit); `whenFull` says what a new key then gets.
  int64_t maxRows = 0;
  TableFull whenFull = TableFull::Evict;
};

/// What a table's room limit has done since it started.
struct RoomCounts {
  uint64_t evicted = 0; ///< rows dropped to make room for new keys
  uint64_t refused = 0; ///< pushes of new keys that found the table full (TableFull::Refuse)
  uint64_t countersForgotten = 0; ///< admission counters dropped when they filled their room
  bool any() const { return evicted + refused + countersForgotten > 0; }
  bool operator==(const RoomCounts &o) const {
    return evicted == o.evicted && refused == o.refused && countersForgotten == o.countersForgotten;
  }
  RoomCounts &operator+=(const RoomCounts &o) {
    evicted += o.evicted, refused += o.refused, countersForgotten += o.countersForgotten;
    return *this;
  }
};

/// Table keys as the row index hashes them. LLVM's default (key * 37) maps a run of ids onto a run
/// of buckets; a table that evicts while new ids arrive then probed through long clusters (5 us
/// a key). The mix differs from the routing's (mixKey), so a pserver's keys spread over all
/// buckets.
struct TableKeyInfo {
  static uint64_t getEmptyKey() { return ~uint64_t(0); }
  static uint64_t getTombstoneKey() { return ~uint64_t(0) - 1; }
  static unsigned getHashValue(uint64_t key) {
    return static_cast<unsigned>(mixKey(key ^ kGoldenGamma) >> 32);
  }
  static bool isEqual(uint64_t a, uint64_t b) { return a == b; }
};

/// How often and how lately a row was pushed: what shrinking an exported table reads.
struct RowStats {
  uint64_t pushes = 0;   ///< pushes that updated the row (a loaded row keeps its count)
  uint64_t stepsAgo = 0; ///< table steps since its last push
};

/// A hash map from key to one contiguous row: the weights, then the optimizer's state (adagrad:
/// one accumulator per weight, or one per row; adam: two moments per weight, then beta1^t and
/// beta2^t of this row). A row's first weights come from (seed, table, key) alone, so the same
/// key starts the same whichever pserver or thread makes it. Rows are made by the first push;
/// a pull of a key without a row gets its initial weights and stores nothing. Memory grows with
/// the rows pushed, whatever the table's declared height. Not thread safe: one service thread
/// owns a table.
class SparseTable {
public:
  explicit SparseTable(SparseTableConfig config);
  const SparseTableConfig &config() const { return config_; }
  int64_t width() const { return config_.width; }
  /// Floats per row: weights and state.
  int64_t stride() const { return stride_; }

  /// Writes the weights of each key into out[k * width ...].
  void pull(llvm::ArrayRef<uint64_t> keys, float *out) const;
  /// Applies one gradient row per key (each key once) times `scale`, at learning rate `lr`,
  /// making rows for keys that have none and are admitted (see SparseTableConfig).
  void push(llvm::ArrayRef<uint64_t> keys, const float *grads, float lr, float scale);
  /// Advances the table's step (rows remember the step of their last push); every evictAfter
  /// steps, drops the rows unseen for evictAfter steps. Returns the rows dropped.
  size_t endStep();
  /// Keys pushed but not yet admitted (their push counts).
  size_t pendingKeys() const { return pushCounts_.size(); }
  /// Sets the room limit (SparseTableConfig::maxRows, whenFull).
  void setRoom(int64_t maxRows, TableFull whenFull) {
    config_.maxRows = maxRows, config_.whenFull = whenFull;
  }
  /// What the room limit has done so far; safe to read from any thread.
  RoomCounts roomCounts() const {
    return {evictedForRoom_.load(std::memory_order_relaxed),
            refused_.load(std::memory_order_relaxed),
            countersForgotten_.load(std::memory_order_relaxed)};
  }

  size_t rows() const { return index_.size(); }
  /// Calls fn(key, row) for every row (stride() floats: weights, then state), in no order.
  template <typename Fn> void forEachRow(Fn fn) const {
    for (const auto &[key, r] : index_)
      fn(key, rowAt(r));
  }
  /// Copies the whole row of `key` (which has one) into out.
  void readRow(uint64_t key, float *out) const;
  /// Sets the whole row of `key` (weights and state), making it if needed, with `stats` when
  /// given (else: pushed once, now). A full table that refuses keys drops it (counted).
  void setRow(uint64_t key, const float *row, const RowStats *stats = nullptr);
  /// Sets the weights of `key`, its optimizer state as a new row's, and `stats` when given.
  void setWeights(uint64_t key, const float *weights, const RowStats *stats = nullptr);
  /// The stats of `key`, which has a row.
  RowStats rowStats(uint64_t key) const;
  /// Steps the table has ended (endStep calls); a table loaded from a checkpoint goes on
  /// counting from the checkpoint's (its rows' stats count in those steps).
  uint32_t step() const { return step_; }
  void setStep(uint32_t step) { step_ = step; }
  /// How a row starts (the config's init, seed and name).
  RowInit rowInit() const;
  /// Bytes held: the row chunks and the index.
  size_t bytesHeld() const;
  /// The initial weights of `key` (what a pull of a key without a row returns).
  void initialWeights(uint64_t key, float *out) const;

  /// Rows made at a time: the table's memory grows by one chunk of rows.
  static constexpr uint32_t kChunkRows = 4096;

private:
  /// The row of `key`, made if it has none; nullptr when the table is full and refuses keys.
  float *rowOf(uint64_t key);
  /// Drops the least recently pushed quarter of the rows (a full table that evicts).
  void evictLeastRecent();
  /// Drops the admission counters of keys pushed once; all of them if that frees too few.
  void forgetCounters();
  /// Whether a push of `key`, which has no row, makes one now.
  bool admit(uint64_t key);
  float *rowAt(uint32_t r) const {
    return chunks_[r / kChunkRows].get() + static_cast<size_t>(r % kChunkRows) * stride_;
  }
  void update(float *row, const float *grad, float lr, float scale) const;

  SparseTableConfig config_;
  int64_t stride_ = 1;
  RowInit init_;
  uint64_t tableSeed_ = 0; ///< seed and table name mixed: one stream per table
  llvm::DenseMap<uint64_t, uint32_t, TableKeyInfo> index_; ///< key -> row number
  std::vector<std::unique_ptr<float[]>> chunks_;           ///< kChunkRows rows each
  uint32_t used_ = 0;
  std::vector<uint32_t> freeRows_; ///< row numbers of evicted rows, reused first
  std::vector<uint32_t> lastPush_; ///< by row number: the step of its last push
  std::vector<uint32_t> pushes_;   ///< by row number: pushes that updated it
  llvm::DenseMap<uint64_t, uint32_t, TableKeyInfo> pushCounts_; ///< keys not yet admitted -> pushes
  uint32_t step_ = 0;
  std::atomic<uint64_t> evictedForRoom_{0}, refused_{0}, countersForgotten_{0};
};

/// Floats in a row of `config`: its weights, then its optimizer's state.
inline int64_t rowFloats(const SparseTableConfig &config) {
  return config.width + tableStateFloats(config.optimizer, config.rowWise, config.width);
}

} // namespace oar::runtime
