// The hash of a single-machine job that a distributed job's digest and its checkpoints carry.
#include "ir/job_hash.h"

#include "llvm/Support/xxhash.h"

namespace oar {

uint64_t jobHash(const proto::Program &main, const proto::Program &startup) {
  std::string bytes;
  // A program over protobuf's 2 GiB limit adds nothing: the digest then covers the plan and the
  // other program, and writing that program fails with its own error.
  (void)appendProgramBytes(main, bytes);
  (void)appendProgramBytes(startup, bytes);
  return llvm::xxHash64(bytes);
}

} // namespace oar
