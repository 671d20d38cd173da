// Pre-faulted arena blocks for the transpiler's programs.
#include "transpiler/arena_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace oar {

namespace {

/// Large enough that a job mallocs few blocks, small enough that glibc serves them from its heap.
/// Larger blocks made transpiling slower: glibc maps those afresh or hands them back on free, so
/// every transpile faulted them in again.
constexpr size_t kStartBlockBytes = 64 << 10, kMaxBlockBytes = 256 << 10;

/// Faults in the whole pages of [begin, begin + size) in one system call. Advisory: memory the
/// kernel does not populate faults in on first touch instead.
void populate(void *begin, size_t size) {
#ifdef MADV_POPULATE_WRITE // glibc 2.35 and later name it
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t first = (reinterpret_cast<uintptr_t>(begin) + page - 1) & ~(page - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(begin) + size) & ~(page - 1);
  if (end > first)
    (void)madvise(reinterpret_cast<void *>(first), end - first, MADV_POPULATE_WRITE);
#endif
}

/// Fails as protobuf's own block allocator (operator new) does: protobuf does not check for null.
void *allocatePopulated(size_t size) {
  void *block = std::malloc(size);
  if (!block)
    throw std::bad_alloc();
  populate(block, size);
  return block;
}

void freeBlock(void *block, size_t) { std::free(block); }

} // namespace

std::unique_ptr<google::protobuf::Arena> newProgramArena() {
  google::protobuf::ArenaOptions options;
  options.start_block_size = kStartBlockBytes;
  options.max_block_size = kMaxBlockBytes;
  options.block_alloc = allocatePopulated;
  options.block_dealloc = freeBlock;
  return std::make_unique<google::protobuf::Arena>(options);
}

} // namespace oar
