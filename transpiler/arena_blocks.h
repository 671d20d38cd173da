// The memory the transpiler's programs live in: protobuf arenas whose blocks come pre-faulted.
#pragma once

#include <memory>

#include "google/protobuf/arena.h"

namespace oar {

/// A new arena for one job's programs. Its blocks are malloc'd (so freed ones are reused by the
/// next transpile) and have their pages faulted in by one madvise(MADV_POPULATE_WRITE) each,
/// instead of one trap per 4 KiB page: a transpile of a large model fills about 100 MB of fresh
/// memory, and on the virtual machine we measured, 128 MB took 0.38-0.49 s a page at a time and
/// 0.10 s populated (bench_transpile's first round: 0.20-0.24 s instead of 0.29-0.37 s). Where the
/// kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) the pages fault in one by one, as before.
std::unique_ptr<google::protobuf::Arena> newProgramArena();

} // namespace oar
