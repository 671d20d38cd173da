// Writing a whole file through an LLVM stream, its errors returned instead of ending the process.
#pragma once

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

/// Creates (or truncates) `file` and lets `write` fill it. Errors name `shown`, the path the
/// user knows (a caller writing a temporary first passes the final path): "<shown>: cannot
/// write<what>: ..." when the file cannot be opened, "<shown>: write failed: ..." when a write
/// or the close fails (a full disk). An LLVM stream whose error is left set ends the process
/// from its destructor; the stream here never does.
llvm::Error writeFile(llvm::StringRef file, llvm::StringRef shown, llvm::StringRef what,
                      llvm::function_ref<void(llvm::raw_ostream &)> write);

} // namespace oar
