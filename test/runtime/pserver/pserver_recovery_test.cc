// Pservers of a checkpointing sync job killed at seeded times and started again: while the
// trainers read params from their memory, and while the job recovers from another one's loss.
// Every run must end with the bits of the uninterrupted run.
#include <cstdlib>
#include <random>
#include <sstream>

#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// 784-512-256-10: fc_0.w_0 is 1.6 MB, so each pserver's block of it (800 KB, past the 256 KiB
/// at which params move through peer memory) is read from the pserver's memory every step.
void makeMlp(const std::string &dir) {
  Fixture f = loadFixture("mnist_mlp_momentum");
  makeModel(dir, "--model=mlp --in=784 --hidden=512,256 --out=10 "
                 "--loss=softmax_with_cross_entropy --optimizer=momentum --lr=0.05 "
                 "--momentum=0.9 --epochs=6 --batch-size=16 --format=npy --data=" +
                     f.dir + "/x.npy," + f.dir + "/y.npy");
}

/// Kills pservers in `runs` jobs, seeded by `firstSeed`..: one pserver when trainer 0 logs one of
/// its steps 20-191 (of 384: a step, not a time, so the job is never over by then however fast
/// the machine), restarted 0.3 s later; in two runs of three the other pserver too, while the
/// job recovers.
void killPserversAtSeededTimes(const std::string &name, int firstSeed, int runs) {
  std::string dir = scratchDir(name);
  makeMlp(dir + "/model");
  const char *params[] = {"fc_0.w_0", "fc_0.b_0", "fc_1.w_0", "fc_2.w_0"};
  std::string flags = "--mode sync --checkpoint-every 25 --checkpoint-dir ";
  std::string whole = runJob(dir + "/model", dir + "/whole", "none", "0",
                             "--mode sync --save " + dir + "/whole/params");
  REQUIRE_THAT(whole, Contains("trainer.0 0") && Contains("trainer.1 0"));
  for (int seed = firstSeed; seed < firstSeed + runs; ++seed) {
    std::mt19937 random(static_cast<unsigned>(seed));
    std::string victim = "pserver." + std::to_string(seed % 2);
    std::string other = "pserver." + std::to_string(1 - seed % 2);
    // Trainer 0 logs every 19th step (of 384): 1, 20, 39, ...
    int step = 1 + 19 * std::uniform_int_distribution<int>(1, 10)(random);
    std::ostringstream second;
    second << std::uniform_real_distribution<double>(0, 1.0)(random);
    bool twice = seed % 3 != 0;
    std::string run = dir + "/run" + std::to_string(seed);
    std::string env = "RESTART_AFTER=0.3 VICTIM_WAIT_IN=trainer.0 VICTIM_WAIT_FOR='step " +
                      std::to_string(step) + "/'";
    if (twice)
      env += " SECOND_VICTIM=" + other + " SECOND_AFTER=" + second.str();
    std::string out =
        runJob(dir + "/model", run, victim, "0", flags + run + "/ckpt --save " + run + "/params",
               nullptr, "paddle1", env);
    std::string logs = readFile(run + "/trainer.0.log") + readFile(run + "/trainer.1.log");
    INFO("seed " << seed << ": " << victim << " killed at step " << step
                 << (twice ? ", then " + other + " " + second.str() + " s after its restart" : "")
                 << "\n"
                 << out << logs);
    CHECK_THAT(out, Contains(victim + ".restarted 0") && Contains("trainer.0 0") &&
                        Contains("trainer.1 0"));
    if (twice)
      CHECK_THAT(out, Contains(other + ".restarted 0"));
    for (const char *param : params) {
      std::string bits = readFile(dir + "/whole/params/" + param + ".npy");
      CHECK(!bits.empty());
      CHECK(bits == readFile(run + "/params/" + param + ".npy"));
    }
  }
}

} // namespace

TEST_CASE("pservers killed while trainers read their memory, and again while the job recovers, "
          "come back with the bits of an uninterrupted run",
          "[e2e][runtime][fault][checkpoint]") {
  killPserversAtSeededTimes("pserver_recovery", 1, 2);
}

// The 20 seeded kills: about 4 minutes on 2 cores. Run with `oar_tests "[long]"`.
TEST_CASE("20 seeded pserver kills in a checkpointing 2x2 sync job all end with the bits of an "
          "uninterrupted run",
          "[.][long][e2e][runtime][fault][checkpoint]") {
  killPserversAtSeededTimes("pserver_recovery_20", 1, 20);
}
