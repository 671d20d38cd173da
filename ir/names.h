// Derived var names: the only place that formats or parses name suffixes.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "llvm/ADT/StringRef.h"

namespace oar {

inline constexpr llvm::StringRef kGradSuffix = "@GRAD";
inline constexpr llvm::StringRef kRenameSuffix = "@RENAME@";
inline constexpr llvm::StringRef kBlockSuffix = ".block";
inline constexpr llvm::StringRef kTrainerSuffix = ".trainer_";
/// The placeholder for an output slot entry nobody needs (a gradient that is not wanted).
inline constexpr llvm::StringRef kEmptyVarName = "@EMPTY@";

/// `w` -> `w@GRAD`.
std::string gradName(llvm::StringRef var);
/// `w@GRAD` -> `w`; nullopt when `name` is not a gradient name.
std::optional<std::string> gradOf(llvm::StringRef name);
/// `w@GRAD`, 2 -> `w@GRAD@RENAME@2`: one of several contributions that autodiff sums.
std::string renamedGrad(llvm::StringRef grad, unsigned index);
/// `w`, 1 -> `w.block1`.
std::string blockName(llvm::StringRef var, unsigned block);
/// `w.block1` -> (`w`, 1); nullopt when `name` is not a block name.
std::optional<std::pair<std::string, unsigned>> blockOf(llvm::StringRef name);
/// `w@GRAD.block1`, 0 -> `w@GRAD.block1.trainer_0`: one trainer's copy on a pserver.
std::string trainerCopyName(llvm::StringRef var, unsigned trainer);
/// `w.block0` -> `w.block0@DELTA`: a GEO trainer's change to a param block since the last sync.
std::string deltaName(llvm::StringRef var);
/// `w` -> `w@SYNCED`: a GEO trainer's copy of the param as the pservers last gave it.
std::string syncedName(llvm::StringRef var);
/// `w.block0` -> `w.block0@PREVIOUS`: an async pserver's current version of a param, read by an
/// update that writes the next version into a fresh buffer (runtime/pserver/param_versions.h).
std::string previousVersionName(llvm::StringRef var);
/// `w@GRAD` -> `w@GRAD@DENSE`: a local sparse table's gradient rows as a dense tensor (zeros
/// elsewhere), for the pservers that update the table as a dense param; `w` -> `w@ZEROS`.
std::string denseGradName(llvm::StringRef grad);
std::string zerosName(llvm::StringRef var);
/// An exported table's vars: `t` -> `t@KEYS` (sorted keys), `t@VALUES` (their rows), `t@INDEX`
/// (the index a predictor builds over the keys).
std::string tableKeysName(llvm::StringRef table);
std::string tableValuesName(llvm::StringRef table);
std::string tableIndexName(llvm::StringRef table);
/// `w` -> `w@BF16`: a served weight rounded to bfloat16 (a predictor's bf16 layers).
std::string bf16Name(llvm::StringRef var);
/// `w` -> `w@PADDED`: a served layer's weight and bias with rows padded to 16 floats (a
/// predictor's layers fed by a relu, serving/sparse_input_layer.h).
std::string paddedName(llvm::StringRef var);
/// Names of a parameter's optimizer state: `w`, "moment1" -> `w_moment1_0`.
std::string accumulatorName(llvm::StringRef param, llvm::StringRef kind);

} // namespace oar
