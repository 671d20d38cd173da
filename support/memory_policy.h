// How a node's allocator treats the large buffers it receives every step.
#pragma once

namespace oar::runtime {

/// Keeps freed memory in the process for reuse. A node receives megabytes per step into fresh
/// buffers; with glibc's defaults a large one may be a new mmap (or a heap top trimmed back to
/// the kernel), so every page faults in again: about a thousand faults a step for the MNIST MLP.
/// A user's MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ are kept. Process-wide; idempotent.
void keepFreedMemoryForReuse();

/// For a node that promised a memory bound (a pserver with --table-memory-mb): buffers of 4 MiB
/// or more are mapped for themselves and unmapped when freed, and at most 32 MiB of freed heap
/// stays mapped. Keeping more, a pserver taking 1 M keys a push grew by 25 MB a step with its
/// tables within 16 MB (the heap's holes did not fit the next step's buffers). Called after
/// keepFreedMemoryForReuse, it wins; a user's MALLOC_* settings are kept.
void boundFreedMemory();

} // namespace oar::runtime
