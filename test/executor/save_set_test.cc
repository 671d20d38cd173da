// A save replaces its files as a set: a process killed at any point of a save over an older one
// leaves, once the directory is read again, every file of the old save or every file of the new.
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "executor/save_set.h"
#include "test/helpers/expect.h"
#include "train/training_loop.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

constexpr int kVars = 8;
constexpr int64_t kElems = 1 << 16; // 256 KiB a file

std::string paramName(int i) { return llvm::formatv("p{0}", i).str(); }

/// Block 0 declares parameters p0..p7, f32[kElems].
proto::Program eightParams() {
  proto::Program p;
  proto::Block *b = p.add_blocks();
  for (int i = 0; i < kVars; ++i) {
    proto::Var *v = b->add_vars();
    v->set_name(paramName(i));
    v->set_persistable(true);
    v->set_is_parameter(true);
    v->mutable_type()->set_dtype(proto::F32);
    v->mutable_type()->add_dims(kElems);
  }
  return p;
}

/// Sets every element of every parameter to `value`.
void fillAll(Scope &scope, float value) {
  for (int i = 0; i < kVars; ++i) {
    Tensor &t = scope.get(paramName(i));
    t.resize(DType::F32, {kElems});
    std::fill_n(t.data<float>(), kElems, value);
  }
}

/// The one value every element of every parameter holds, or -1 when they differ (a mixed save).
float commonValue(Scope &scope) {
  float first = scope.find("p0")->data<float>()[0];
  for (int i = 0; i < kVars; ++i) {
    const float *d = scope.find(paramName(i))->data<float>();
    if (!std::all_of(d, d + kElems, [&](float x) { return x == first; }))
      return -1;
  }
  return first;
}

} // namespace

TEST_CASE("a save killed at any point leaves the old set of files or the new one, never a mix",
          "[executor][save][fault]") {
  proto::Program program = eightParams();
  int mixed = 0;
  for (int round = 0; round < 6; ++round) {
    std::string dir = scratchDir("save_set_kill_" + std::to_string(round));
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) { // saves 1, 2, 3, ... over each other until killed
      Scope scope;
      for (int i = 1;; ++i) {
        fillAll(scope, static_cast<float>(i));
        if (llvm::Error err = savePersistables(program, scope, dir)) {
          llvm::consumeError(std::move(err));
          _exit(1);
        }
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(150 + 37 * round));
    kill(child, SIGKILL);
    int status = 0;
    waitpid(child, &status, 0);
    REQUIRE(WIFSIGNALED(status));
    Scope loaded;
    auto names = loadPersistables(program, loaded, dir);
    if (!names) { // killed before the first save had all its files: nothing of it may show
      CHECK_THAT(llvm::toString(names.takeError()), Contains("missing"));
      continue;
    }
    float value = commonValue(loaded);
    INFO("round " << round);
    CHECK(value > 0);
    mixed += value < 0;
  }
  CHECK(mixed == 0);
}

TEST_CASE("a save set stages under its directory only, and an uncommitted one leaves nothing",
          "[executor][save]") {
  std::string dir = scratchDir("save_set_scope");
  Tensor t = Tensor::fromVector<float>({2}, {1.0f, 2.0f});
  {
    SaveSet files(dir);
    CHECK_THAT(errorText(files.add("/tmp/elsewhere.npy", t)),
               Contains("not a file name under the saved directory"));
    REQUIRE_OK(files.add(dir + "/a.npy", t));
    CHECK(llvm::sys::fs::exists(dir + "/a.npy.staged"));
  } // dropped without commit()
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/a.npy.staged"));
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/a.npy"));
  // A journal that names a file outside the directory is refused, not followed.
  writeFile(dir + "/.oar-save.1.journal", "oar-save 1\n../../etc/passwd\n");
  CHECK_THAT(errorText(finishInterruptedSaves(dir)), Contains("names a file outside"));
}
