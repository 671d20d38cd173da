// Whole training runs against the PyTorch reference trajectories in test/fixtures/.
#include "executor/npy.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/skip.h"
#include "train/training_loop.h"

using namespace oar;

// Builds the fixture's model, loads init/, trains on x.npy/y.npy and compares every step's loss
// (1e-4 relative) and the final parameters (rtol 1e-3, atol 1e-5), on `device`.
static void reproduce(const std::string &name, Device device = Device::Cpu) {
  useReproducibleGemm();
  Fixture f = loadFixture(name);
  ModelBuilder m = requireValue(buildRecipe(f.spec));
  REQUIRE_OK(verifyProgram(m.main(), name + " main"));
  REQUIRE_OK(verifyProgram(m.startup(), name + " startup"));
  Executor exec(device);
  Scope scope;
  REQUIRE_OK(exec.run(m.startup(), scope));
  auto loaded = requireValue(loadPersistables(m.main(), scope, f.dir + "/init"));
  CHECK(loaded.size() >= f.params.size());
  auto reports = requireValue(trainLoop(exec, m.main(), scope, {}));
  REQUIRE(static_cast<int64_t>(reports.size()) == f.steps);
  for (size_t i = 0; i < reports.size(); ++i) {
    INFO(name << " step " << i << ": oar " << reports[i].loss << ", torch " << f.losses[i]);
    CHECK(std::abs(reports[i].loss - f.losses[i]) <= 1e-4 * std::abs(f.losses[i]));
  }
  for (const std::string &p : f.params) {
    Tensor want = requireValue(readNpy(f.dir + "/final/" + p + ".npy"));
    const Tensor *got = scope.find(p);
    REQUIRE(got);
    INFO(name << " final " << p);
    CHECK(toleranceRatio(onHost(*got), want, 1e-3, 1e-5) <= 1.0);
  }
}

TEST_CASE("every reference fixture is reproduced step by step", "[executor][fixture]") {
  auto names = fixtureNames();
  REQUIRE(names.size() >= 4);
  for (const std::string &name : names) {
    SECTION(name) { reproduce(name); }
  }
}

TEST_CASE("every reference fixture is reproduced on the GPU", "[cuda][fixture]") {
  if (llvm::Error err = usePlace({Device::Cuda, 0})) {
    OAR_SKIP("no GPU visible: " << llvm::toString(std::move(err)));
  }
  for (const std::string &name : fixtureNames()) {
    SECTION(name) { reproduce(name, Device::Cuda); }
  }
}
