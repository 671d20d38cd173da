// NumPy .npy files: read and write tensors (version 1.0 headers, little-endian, C order).
#pragma once

#include "executor/tensor.h"

namespace oar {

/// Reads f4/f8/i4/i8 arrays (and u1, widened to i64). Errors name the file.
llvm::Expected<Tensor> readNpy(llvm::StringRef path);
/// Writes `t` so numpy.load reads it back with the same dtype and shape: under `path`.tmp, then
/// renamed over `path`, so a reader never finds half a file.
llvm::Error writeNpy(llvm::StringRef path, const Tensor &t);
/// Writes `t` at `file` itself and flushes it to disk (a failed write leaves no file); errors
/// name `path`, the file it stands in for.
llvm::Error writeNpySynced(llvm::StringRef file, llvm::StringRef path, const Tensor &t);

} // namespace oar
