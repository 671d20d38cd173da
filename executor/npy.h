// NumPy .npy files: read and write tensors (version 1.0 headers, little-endian, C order).
#pragma once

#include "executor/tensor.h"

namespace oar {

/// Reads f4/f8/i4/i8 arrays (and u1, widened to i64; f2, widened to f32). Errors name the file.
llvm::Expected<Tensor> readNpy(llvm::StringRef path);
/// Writes `t` so numpy.load reads it back with the same dtype and shape: under `path`.tmp, then
/// renamed over `path`, so a reader never finds half a file.
llvm::Error writeNpy(llvm::StringRef path, const Tensor &t);
/// Writes `t` at `file` itself and flushes it to disk (a failed write leaves no file); errors
/// name `path`, the file it stands in for. With `asF16`, an f32 `t` is written as float16.
llvm::Error writeNpySynced(llvm::StringRef file, llvm::StringRef path, const Tensor &t,
                           bool asF16 = false);

/// IEEE float to half, rounded to nearest even (overflow gives inf), and back.
uint16_t floatToHalf(float f);
float halfBitsToFloat(uint16_t h);

} // namespace oar
