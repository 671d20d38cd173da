// libFuzzer target: the .npy reader (checkpoints, data columns) on arbitrary bytes.
#include "executor/npy.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  oar::fuzz::MemoryFile file(data, size);
  llvm::consumeError(oar::readNpy(file.path()).takeError());
  return 0;
}
