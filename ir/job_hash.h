// The hash of a single-machine job that a distributed job's digest and its checkpoints carry.
#pragma once

#include <cstdint>

#include "ir/program.h"

namespace oar {

/// A hash of a single-machine job, `main` and `startup` serialized deterministically.
/// xxHash64 (LLVM's), which hashes a megabyte in a tenth of a millisecond; FNV-1a, a byte at a
/// time, took as long as serializing the job, and ran once per digest.
uint64_t jobHash(const proto::Program &main, const proto::Program &startup);

} // namespace oar
