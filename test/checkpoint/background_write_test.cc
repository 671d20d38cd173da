// Checkpoint files written off the training thread, one write at a time.
#include <atomic>
#include <chrono>
#include <thread>

#include "checkpoint/background_write.h"
#include "support/error.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("a background write returns at once, the next waits for it, and an error comes back",
          "[checkpoint]") {
  BackgroundWrite writer;
  std::atomic<bool> release{false}, ran{false};
  // The task waits for `release`, which is set only after start returns: a start that waited
  // for its task would never return, and `ran` still false shows it returned first.
  REQUIRE_OK(writer.start([&] {
    while (!release)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ran = true;
    return llvm::Error::success();
  }));
  CHECK_FALSE(ran);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    release = true;
  });
  // The second write starts once the first is done: one write at a time.
  REQUIRE_OK(writer.start([&] {
    CHECK(ran);
    return makeError("disk full");
  }));
  releaser.join();
  CHECK_THAT(errorText(writer.start([] { return llvm::Error::success(); })), Contains("disk full"));
  REQUIRE_OK(writer.wait());
}

TEST_CASE("a copy of the persistable vars does not change with them", "[checkpoint]") {
  proto::Program p = newProgram();
  declareVar(*p.mutable_blocks(0), "w", proto::F32, {2}).set_persistable(true);
  declareVar(*p.mutable_blocks(0), "tmp", proto::F32, {2});
  Scope scope;
  scope.get("w") = Tensor::fromVector<float>({2}, {1, 2});
  scope.get("tmp") = Tensor::fromVector<float>({2}, {3, 4});
  Scope copy = copyPersistables(p, scope);
  scope.get("w").data<float>()[0] = 9;
  CHECK(copy.find("w")->toVector<float>() == std::vector<float>{1, 2});
  CHECK(copy.find("tmp") == nullptr);
}
