// libFuzzer target: a Program from untrusted bytes (a .pb a user or peer hands over) through the
// parser and the verifier that every tool runs before anything else.
#include "ops/verify.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  oar::proto::Program prog;
  if (!prog.ParseFromArray(data, static_cast<int>(size)))
    return 0;
  llvm::consumeError(oar::verifyProgram(prog, "fuzz.pb"));
  return 0;
}
