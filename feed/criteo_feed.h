// The criteo data feed: Criteo click-log text read as a stream, never held whole.
//
// A line is `label \t I1..I13 \t C1..C26`, empty fields missing. The feed has three columns:
//   label  [B, 1]  f32 (or f64, i64): 0 or 1
//   dense  [B, 13] f32 (or f64): sign(x) * log(1 + |x|) of each integer feature (log(1+x) for the
//                  counts Criteo has), 0 when missing
//   sparse [B, 26] i64: one key per categorical slot, a 63-bit hash of (slot, value), so keys are
//                  non-negative in an i64 and the same value in two slots gives two keys; a
//                  missing value hashes as the empty string, a key of its own per slot
// Trainer i of N reads lines i, i+N, ... of a single file, or whole files i, i+N, ... when the feed
// names several (it then needs at least N files). Files may be gzip-compressed. With `shuffle`, a
// buffer of `shuffle_buffer` rows (seeded by `seed` and the trainer) shuffles the stream; `limit`
// reads only the first lines of each file.
#pragma once

#include <memory>

#include "feed/batch_source.h"

namespace oar {

inline constexpr int kCriteoDense = 13, kCriteoSlots = 26;

/// One parsed line.
struct CriteoRow {
  float label = 0;
  float dense[kCriteoDense] = {};
  uint64_t keys[kCriteoSlots] = {};
};

/// The key of `value` in categorical slot `slot` (0-based): a 63-bit hash, stable across
/// machines and releases.
uint64_t criteoKey(int slot, llvm::StringRef value);

/// Parses one line (without its newline). The error says what is wrong, for the caller to put
/// after `file:line: `.
llvm::Error parseCriteoLine(llvm::StringRef line, CriteoRow &row);

/// The criteo feed's source for trainer `trainerId` of `trainers` (see the file comment).
/// Checks the columns' vars and that the files exist; reads nothing yet.
llvm::Expected<std::unique_ptr<BatchSource>> openCriteoSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers);

} // namespace oar
