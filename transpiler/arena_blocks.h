// The memory the transpiler's programs live in: protobuf arenas whose blocks come pre-faulted.
#pragma once

#include <memory>

#include "google/protobuf/arena.h"

namespace oar {

/// A new arena for one job's programs. Its blocks are malloc'd (so freed ones are reused by the
/// next transpile) and have their pages faulted in by one madvise(MADV_POPULATE_WRITE) each: a
/// transpile of a large model fills about 100 MB of fresh memory, and on the virtual machines we
/// measured one trap per 4 KiB page cost 10 µs, a third of a fresh process's transpile. Where the
/// kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) the pages fault in one by one, as before.
std::unique_ptr<google::protobuf::Arena> newProgramArena();

} // namespace oar
