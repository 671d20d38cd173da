// Allocator settings for nodes that receive large tensors every step.
#include "support/memory_policy.h"
#include "support/env_names.h"

#include <cstdlib>
#include <malloc.h>

namespace oar::runtime {

void keepFreedMemoryForReuse() {
  // Buffers up to 32 MiB (glibc's largest mmap threshold) come from the heap...
  if (!std::getenv(env::kMallocMmapThreshold))
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // ...and up to 512 MiB of freed heap stays mapped for the next step's buffers.
  if (!std::getenv(env::kMallocTrimThreshold))
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void boundFreedMemory() {
  if (!std::getenv(env::kMallocMmapThreshold))
    mallopt(M_MMAP_THRESHOLD, 4 << 20);
  if (!std::getenv(env::kMallocTrimThreshold))
    mallopt(M_TRIM_THRESHOLD, 32 << 20);
}

} // namespace oar::runtime
