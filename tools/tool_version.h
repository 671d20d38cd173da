// `--version` for every oar tool: oar's version, not LLVM's (llvm::cl's default printer).
#pragma once

#include "ir/version.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

/// Makes `--version` print "<tool> (oar) <version>". Call before ParseCommandLineOptions.
inline void setToolVersion(const char *tool) {
  static const char *name = tool;
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &os) { os << name << " (oar) " << versionString() << "\n"; });
}

} // namespace oar
