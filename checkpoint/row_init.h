// How a row of a sparse table starts: weights drawn from (seed, table, key) alone, so a key starts
// the same on any pserver, in any checkpoint loader and in an exported model.
#pragma once

#include <cstdint>
#include <string>

#include "ir/program.h"

namespace oar {

/// The initial weights of every key of one table.
struct RowInit {
  /// uniform in [a, b), gaussian (mean a, std b), or constant a.
  std::string kind = "uniform";
  float a = -0.1f, b = 0.1f;
  int64_t seed = 0;  ///< the startup initialiser's seed
  std::string table; ///< the table's name: each table draws its own stream

  /// Writes the `width` initial weights of `key` into `out`.
  void weights(uint64_t key, int64_t width, float *out) const {
    weightsFrom(streamSeed(), key, width, out);
  }
  /// The table's stream (seed and name mixed), for callers that draw many keys.
  uint64_t streamSeed() const;
  void weightsFrom(uint64_t streamSeed, uint64_t key, int64_t width, float *out) const;
  /// "uniform -0.05 0.05 seed 7", as TableInfo files and oar-show print it.
  std::string describe() const;
};

/// The RowInit of table `table` from the startup op that initialises it (uniform_random,
/// gaussian_random or fill_constant; `init` empty: a constant 0), as the single-machine program
/// declares it. Other initialisers start every row at 0.
RowInit rowInitOf(const proto::Op &init, llvm::StringRef table);

/// The startup op that writes `var`, or nullptr.
const proto::Op *initializerOf(const proto::Program &startup, llvm::StringRef var);

} // namespace oar
