// Flag parsing for every oar tool: llvm::cl, without its one trap.
#pragma once

#include <cstdlib>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

/// llvm::cl::ParseCommandLineOptions, after refusing the flags it would take for `-h` (help)
/// plus a value: `--hybrid-tables=sync` or `--hosts` printed the help and exited 0, so a
/// misspelt flag looked like success. Other unknown flags are llvm::cl's own errors. Flags after
/// a bare `--` belong to another program (oar-launch's nodes) and are left alone.
inline void parseToolFlags(int argc, char **argv, const char *tool, const char *overview) {
  const auto &known = llvm::cl::getRegisteredOptions();
  for (int i = 1; i < argc; ++i) {
    llvm::StringRef arg = argv[i];
    if (arg == "--")
      break;
    if (!arg.startswith("-"))
      continue;
    llvm::StringRef name = arg.ltrim('-').split('=').first;
    if (name.startswith("h") && name != "h" && !known.count(name)) {
      llvm::errs() << tool << ": error: unknown flag " << arg << " (see --help)\n";
      std::exit(1);
    }
  }
  llvm::cl::ParseCommandLineOptions(argc, argv, overview);
}

} // namespace oar
