// Slurm: a 2x2 job as srun tasks of a real single-host Slurm (test/runtime/slurm_job.sh starts
// it), roles from SLURM_PROCID, endpoints through the scheduler that task 0 serves.
#include "executor/npy.h"
#include "runtime/cluster/launcher.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"
#include "test/helpers/skip.h"

using namespace oar;

TEST_CASE("a 2x2 job under srun on a real local Slurm trains as under oar-launch",
          "[e2e][runtime][cluster][slurm]") {
  std::string dir = scratchDir("e2e_slurm");
  makeFitALine(dir + "/model", "--lr=0.01 --batch-size=20 --epochs=2");
  std::string scheduler = "127.0.0.1:" + std::to_string(pickFreePorts(1)[0]);
  std::string out;
  int rc = runCommand(sourceDir() + "/test/runtime/slurm_job.sh " + dir + "/slurm -- srun -n 4 " +
                          "--overcommit --kill-on-bad-exit=1 " + binDir() +
                          "/oar-executor --main " + dir + "/model/main.pb --startup " + dir +
                          "/model/startup.pb --mode sync --scheduler " + scheduler +
                          " --pserver-count 2 --save " + dir + "/srun 2>&1",
                      out);
  if (rc == 77) {
    OAR_SKIP(out);
  }
  INFO(out);
  REQUIRE(rc == 0);
  CHECK_THAT(out, Catch::Matchers::Contains("this node is trainer 1 of 2 pserver(s)") &&
                      Catch::Matchers::Contains("every node finished"));
  run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=sync --save " + dir +
      "/launch " + dir + "/model > " + dir + "/launch.log 2>&1");
  for (const char *param : {"fc_0.w_0", "fc_0.b_0"})
    CHECK(sameBits(requireValue(readNpy(dir + "/srun/" + std::string(param) + ".npy")),
                   requireValue(readNpy(dir + "/launch/" + std::string(param) + ".npy"))));
}
