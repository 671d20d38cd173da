// Pserver checkpoints on disk: complete ones load, torn ones (a pserver killed while writing)
// never do, and only the newest few are kept.
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "runtime/pserver/pserver_checkpoint.h"
#include "runtime/pserver/pserver_tables.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;

namespace {

/// A program whose block 0 declares one parameter, f32[n].
proto::Program oneParam(int64_t n) {
  proto::Program p;
  proto::Var *v = p.add_blocks()->add_vars();
  v->set_name("w");
  v->set_persistable(true);
  v->set_is_parameter(true);
  v->mutable_type()->set_dtype(proto::F32);
  v->mutable_type()->add_dims(n);
  return p;
}

void fill(Scope &scope, int64_t n, float value) {
  Tensor &w = scope.get("w");
  w.resize(DType::F32, {n});
  std::fill_n(w.data<float>(), n, value);
}

/// Whether every element of w in `scope` is `value`.
bool allEqual(Scope &scope, float value) {
  const Tensor *w = scope.find("w");
  return w && std::all_of(w->data<float>(), w->data<float>() + w->numel(),
                          [&](float x) { return x == value; });
}

} // namespace

TEST_CASE("a torn checkpoint is never loaded, and the newest complete ones are kept",
          "[runtime][checkpoint]") {
  std::string dir = scratchDir("ckpt_torn");
  proto::Program program = oneParam(1000);
  PserverTables noTables;
  PserverCheckpoints ckpt(dir, "digest-a", 2);
  Scope scope;
  for (int step : {0, 10, 20, 30}) {
    fill(scope, 1000, static_cast<float>(step));
    REQUIRE_OK(ckpt.write(step, program, scope, noTables));
  }
  REQUIRE_OK(ckpt.finish());                            // writes run off the caller's thread
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/step-10")); // keeps 2
  CHECK(ckpt.latest() == 30);

  // Killed at each point of a write: files without a MANIFEST, a truncated file, a temporary
  // directory. None is taken for the newest.
  llvm::sys::fs::create_directories(dir + "/step-50");
  llvm::sys::fs::copy_file(dir + "/step-30/w.npy", dir + "/step-50/w.npy");
  REQUIRE(system(("cp -r " + dir + "/step-30 " + dir + "/step-40").c_str()) == 0);
  REQUIRE(truncate((dir + "/step-40/w.npy").c_str(), 100) == 0);
  REQUIRE(system(("cp -r " + dir + "/step-30 " + dir + "/.step-60.tmp-1").c_str()) == 0);
  CHECK(ckpt.latest() == 30);
  CHECK_THAT(errorText(ckpt.load(40, program, scope, noTables)),
             Contains("step-40: no complete checkpoint of step 40 for this job"));
  // Another job's checkpoints (another plan) are not this one's.
  CHECK_FALSE(PserverCheckpoints(dir, "digest-b", 2).latest().has_value());

  Scope loaded;
  REQUIRE_OK(ckpt.load(*ckpt.latest(), program, loaded, noTables));
  CHECK(allEqual(loaded, 30.0f));
  fill(scope, 1000, 70.0f);
  REQUIRE_OK(ckpt.write(70, program, scope, noTables)); // clears the torn ones
  REQUIRE_OK(ckpt.finish());
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/step-40"));
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/step-50"));
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/.step-60.tmp-1"));
  CHECK(llvm::sys::fs::exists(dir + "/step-30"));
}

TEST_CASE("a process killed while it writes checkpoints leaves one that loads whole",
          "[runtime][checkpoint][fault]") {
  // A child writes checkpoints of 4 MB (every element = the step) until it is SIGKILLed at some
  // point of some write; the newest complete one must then load with its own step's values.
  const int64_t n = 1 << 20;
  proto::Program program = oneParam(n);
  for (int round = 0; round < 3; ++round) {
    std::string dir = scratchDir("ckpt_kill_" + std::to_string(round));
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      PserverTables noTables;
      PserverCheckpoints ckpt(dir, "d", 2);
      Scope scope;
      for (int step = 0;; ++step) {
        fill(scope, n, static_cast<float>(step));
        if (ckpt.write(step, program, scope, noTables))
          _exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300 + 70 * round));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    PserverTables noTables;
    PserverCheckpoints ckpt(dir, "d", 2);
    std::optional<int64_t> latest = ckpt.latest();
    REQUIRE(latest.has_value());
    Scope scope;
    REQUIRE_OK(ckpt.load(*latest, program, scope, noTables));
    CHECK(allEqual(scope, static_cast<float>(*latest)));
  }
}
