// Allocator settings for nodes that receive large tensors every step.
#include "runtime/memory_policy.h"

#include <cstdlib>
#include <malloc.h>

namespace oar::runtime {

void keepFreedMemoryForReuse() {
  // Buffers up to 32 MiB (glibc's largest mmap threshold) come from the heap...
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_"))
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // ...and up to 512 MiB of freed heap stays mapped for the next step's buffers.
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_"))
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void boundFreedMemory() {
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_"))
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
  if (!std::getenv("MALLOC_TRIM_THRESHOLD_"))
    mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

} // namespace oar::runtime
