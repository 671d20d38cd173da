// How a node's allocator treats the large buffers it receives every step.
#pragma once

namespace oar::runtime {

/// Keeps freed memory in the process for reuse. A node receives megabytes per step into fresh
/// buffers; with glibc's defaults a large one may be a new mmap (or a heap top trimmed back to
/// the kernel), so every page faults in again: about a thousand faults a step for the MNIST MLP.
/// A user's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ are kept. Process-wide; idempotent.
void keepFreedMemoryForReuse();

} // namespace oar::runtime
