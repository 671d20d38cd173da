// Derived var names.
#include "ir/names.h"

#include <charconv>

#include "llvm/ADT/Twine.h"

namespace oar {

std::string gradName(llvm::StringRef var) { return (var + kGradSuffix).str(); }

std::optional<std::string> gradOf(llvm::StringRef name) {
  if (!name.consume_back(kGradSuffix))
    return std::nullopt;
  return name.str();
}

/// `var` + `suffix` + the decimal `n`, built in one allocation: the transpiler makes several
/// such names per param block, and a Twine's str() cost several times as much.
static std::string numbered(llvm::StringRef var, llvm::StringRef suffix, unsigned n) {
  char digits[16];
  char *end = std::to_chars(digits, digits + sizeof(digits), n).ptr;
  std::string name;
  name.reserve(var.size() + suffix.size() + static_cast<size_t>(end - digits));
  name.append(var.data(), var.size()).append(suffix.data(), suffix.size()).append(digits, end);
  return name;
}

std::string renamedGrad(llvm::StringRef grad, unsigned index) {
  return numbered(grad, kRenameSuffix, index);
}

std::string blockName(llvm::StringRef var, unsigned block) {
  return numbered(var, kBlockSuffix, block);
}

std::optional<std::pair<std::string, unsigned>> blockOf(llvm::StringRef name) {
  size_t at = name.rfind(kBlockSuffix);
  if (at == llvm::StringRef::npos || at == 0)
    return std::nullopt;
  unsigned block = 0;
  llvm::StringRef digits = name.drop_front(at + kBlockSuffix.size());
  if (digits.empty() || digits.getAsInteger(10, block) || std::to_string(block) != digits)
    return std::nullopt;
  return std::make_pair(name.take_front(at).str(), block);
}

std::string trainerCopyName(llvm::StringRef var, unsigned trainer) {
  return numbered(var, kTrainerSuffix, trainer);
}

std::string deltaName(llvm::StringRef var) { return (var + "@DELTA").str(); }

std::string syncedName(llvm::StringRef var) { return (var + "@SYNCED").str(); }

std::string previousVersionName(llvm::StringRef var) { return (var + "@PREVIOUS").str(); }

std::string denseGradName(llvm::StringRef grad) { return (grad + "@DENSE").str(); }
std::string zerosName(llvm::StringRef var) { return (var + "@ZEROS").str(); }

std::string tableKeysName(llvm::StringRef table) { return (table + "@KEYS").str(); }
std::string tableValuesName(llvm::StringRef table) { return (table + "@VALUES").str(); }
std::string tableIndexName(llvm::StringRef table) { return (table + "@INDEX").str(); }
std::string bf16Name(llvm::StringRef var) { return (var + "@BF16").str(); }

std::string paddedName(llvm::StringRef var) { return (var + "@PADDED").str(); }

std::string accumulatorName(llvm::StringRef param, llvm::StringRef kind) {
  return (param + "_" + kind + "_0").str();
}

} // namespace oar
