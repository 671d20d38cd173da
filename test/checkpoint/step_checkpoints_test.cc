// Step checkpoints carry a CRC-32 per file: a byte flipped on disk after the write is found
// before anything loads it.
#include <fstream>

#include "checkpoint/step_checkpoints.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// Flips the bits of one byte of `path` in place (its size stays: the MANIFEST's sizes match).
void flipByte(const std::string &path, std::streamoff at) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(f);
  f.seekg(at);
  char c = 0;
  f.get(c);
  f.seekp(at);
  f.put(static_cast<char>(~c));
}

} // namespace

TEST_CASE("a checkpoint file with a flipped byte is refused before it loads, naming the file",
          "[checkpoint]") {
  std::string dir = scratchDir("checkpoint_crc");
  StepCheckpoints steps(dir + "/ckpt", "digest", 2);
  REQUIRE_OK(steps.write(7, [](const std::string &into) -> llvm::Error {
    writeFile(into + "/a.npy", std::string(1000, 'a'));
    llvm::sys::fs::create_directories(into + "/tables");
    writeFile(into + "/tables/b.npy", "bbbb");
    return llvm::Error::success();
  }));
  std::string step = steps.pathOf(7);
  CHECK_THAT(readFile(step + "/MANIFEST"), Contains("crc32 tables/b.npy "));
  REQUIRE_OK(verifyCheckpointFiles(step));
  flipByte(step + "/tables/b.npy", 2);
  CHECK(steps.manifest(7)); // the sizes still match: only the checksum tells
  CHECK_THAT(errorText(verifyCheckpointFiles(step)),
             Contains(step + "/tables/b.npy: its bytes do not match the checksum in MANIFEST"));
}

TEST_CASE("one machine resuming from a damaged checkpoint stops with the file's name",
          "[checkpoint][e2e]") {
  std::string dir = scratchDir("checkpoint_crc_resume");
  makeFitALine(dir + "/model", "--lr=0.003 --batch-size=10 --epochs=1");
  std::string cmd = binDir() + "/oar-executor --main " + dir + "/model/main.pb --startup " + dir +
                    "/model/startup.pb --checkpoint-dir " + dir + "/ckpt --checkpoint-every 5";
  run(cmd);
  std::vector<int64_t> written = checkpointSteps(dir + "/ckpt");
  REQUIRE(!written.empty());
  std::string weights = dir + "/ckpt/step-" + std::to_string(written.front()) + "/fc_0.w_0.npy";
  REQUIRE(llvm::sys::fs::exists(weights));
  flipByte(weights, 130); // a weight, past the .npy header
  std::string out;
  CHECK(runCommand(cmd + " --epochs 2", out) == 1);
  CHECK_THAT(out, Contains(weights + ": its bytes do not match the checksum in MANIFEST"));
}
