// Derived var names.
#include "ir/names.h"

#include "llvm/ADT/Twine.h"

namespace oar {

std::string gradName(llvm::StringRef var) { return (var + kGradSuffix).str(); }

std::optional<std::string> gradOf(llvm::StringRef name) {
  if (!name.consume_back(kGradSuffix))
    return std::nullopt;
  return name.str();
}

std::string renamedGrad(llvm::StringRef grad, unsigned index) {
  return (grad + kRenameSuffix + llvm::Twine(index)).str();
}

std::string blockName(llvm::StringRef var, unsigned block) {
  return (var + kBlockSuffix + llvm::Twine(block)).str();
}

std::string trainerCopyName(llvm::StringRef var, unsigned trainer) {
  return (var + kTrainerSuffix + llvm::Twine(trainer)).str();
}

std::string deltaName(llvm::StringRef var) { return (var + "@DELTA").str(); }

std::string syncedName(llvm::StringRef var) { return (var + "@SYNCED").str(); }

std::string previousVersionName(llvm::StringRef var) { return (var + "@PREVIOUS").str(); }

std::string accumulatorName(llvm::StringRef param, llvm::StringRef kind) {
  return (param + "_" + kind + "_0").str();
}

} // namespace oar
