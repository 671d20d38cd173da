// The launcher's choices (which --num-threads a node gets), and a launch that cannot start its
// nodes.
#include <unistd.h>

#include "runtime/cluster/launcher.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/helpers/skip.h"

using namespace oar;
using Catch::Matchers::Contains;
using oar::runtime::nodeThreadsFlag;

TEST_CASE("oar-launch adds a node's share of threads only where none was set by hand",
          "[runtime]") {
  std::vector<std::string> none, nodeFlag{"--geo-k-steps", "10", "--num-threads=3"};
  // Nothing set: the node's share.
  CHECK(nodeThreadsFlag(none, false, 0, 2) == "--num-threads=2");
  CHECK(nodeThreadsFlag(none, false, 0, 0) == "--num-threads=1");
  // OMP_NUM_THREADS: every node reads it, so no flag overrides it.
  CHECK(nodeThreadsFlag(none, true, 0, 1) == std::nullopt);
  // --server-threads / --worker-threads beat OMP_NUM_THREADS ...
  CHECK(nodeThreadsFlag(none, true, 4, 1) == "--num-threads=4");
  CHECK(nodeThreadsFlag(none, false, 4, 1) == "--num-threads=4");
  // ... and --num-threads among every node's flags beats both.
  CHECK(nodeThreadsFlag(nodeFlag, false, 4, 1) == std::nullopt);
  CHECK(nodeThreadsFlag(nodeFlag, true, 0, 1) == std::nullopt);
}

TEST_CASE("oar-launch that cannot start a node stops the nodes it started and signals nothing "
          "else",
          "[runtime][e2e]") {
  // A failed fork once became pid -1, and stopping the job sent SIGTERM and SIGKILL to pid -1:
  // every process of the user's. The launch runs as nobody under a process limit (root has
  // none), in a PID namespace of its own, beside a process of nobody's outside the job.
  std::string out;
  if (std::string why = whyNobodyCannotRun("oar-launch", {"unshare"}); !why.empty()) {
    OAR_SKIP(why << "; a process limit for another user, in a PID namespace");
  }
  // Nobody cannot enter the test scratch folder (0750): the model goes to a folder of its own.
  char tmpl[] = "/tmp/oar-launch-test.XXXXXX";
  REQUIRE(mkdtemp(tmpl));
  std::string dir = tmpl;
  makeFitALine(dir + "/model", "--lr=0.003 --batch-size=10 --epochs=1");
  REQUIRE(runCommand("chmod -R a+rX " + dir, out) == 0);
  // 3: the first node's fork fails; 4: its output reader's thread; 5: the second pserver's fork,
  // with the first running; 8: a trainer's, with both pservers running.
  for (int limit : {3, 4, 5, 8}) {
    INFO("at most " << limit << " processes and threads");
    REQUIRE(runCommand("unshare --pid --fork --kill-child bash " + sourceDir() +
                           "/test/runtime/launch_without_processes.sh " + std::to_string(limit) +
                           " " + binDir() + "/oar-launch " + dir + "/model",
                       out) == 0);
    INFO(out);
    CHECK_THAT(out, Contains("oar-launch: error: cannot start "));
    // Nobody's processes of another test running beside this one (ctest -j; the keyless tests)
    // count toward the same limit: the launch may then fail before its first node.
    CHECK_THAT(out, Contains("Resource temporarily unavailable); every node was stopped") ||
                        Contains("cannot start the thread that takes SIGTERM and SIGINT: "
                                 "Resource temporarily unavailable"));
    CHECK_THAT(out, Contains("launch exit status 1"));
    CHECK_THAT(out, Contains("sentinel alive"));
  }
  runCommand("rm -rf " + dir, out);
}

TEST_CASE("oar-launch killed with SIGKILL leaves no keys behind", "[runtime][e2e][curve]") {
  // Its destructor never runs: a janitor process of its own removes the key directory.
  std::string dir = scratchDir("launch_keys_sigkill");
  makeFitALine(dir + "/model", "--lr=0.001 --batch-size=10 --epochs=3000");
  std::string out = run(
      "cd " + dir + " && mkdir -p tmp && (TMPDIR=" + dir + "/tmp " + binDir() +
      "/oar-launch --server-num=1 --worker-num=1 --timeout=60 model > launch.log 2>&1 & pid=$!; "
      "for i in $(seq 600); do grep -q 'step ' launch.log && break; sleep 0.05; done; "
      "echo \"keys before: $(ls tmp | grep -c oar-launch-keys)\"; kill -KILL $pid; wait $pid; "
      "for i in $(seq 100); do [ -z \"$(ls tmp)\" ] && break; sleep 0.05; done; "
      "echo \"keys after: $(ls tmp | grep -c oar-launch-keys)\"; "
      // The nodes it left (ours, named by this test's model path) go too.
      "pkill -KILL -f 'oar-executo[r] .*" +
      dir + "/model' ; true)");
  INFO(out << readFile(dir + "/launch.log"));
  CHECK_THAT(out, Contains("keys before: 1") && Contains("keys after: 0"));
}

TEST_CASE("oar-launch lets an async job train on when a trainer dies, then fails naming it",
          "[runtime][e2e][fault]") {
  // Async pservers serve the other trainers on; the launcher must not stop them either. The
  // pservers call the killed trainer lost after the barrier timeout, short here.
  std::string dir = scratchDir("launch_async_trainer_dies");
  makeFitALine(dir + "/model", "--lr=0.001 --batch-size=10 --epochs=600");
  std::string out = run(
      "cd " + dir + " && (" + binDir() +
      "/oar-launch --server-num=2 --worker-num=2 --mode=async --timeout=120 model -- "
      "--barrier-timeout-ms=3000 > launch.log 2>&1 & pid=$!; "
      // A pserver names trainer 1's process when it says hello.
      "for i in $(seq 600); do grep -q 'trainer.1.*step 1/' launch.log && break; sleep 0.05; "
      "done; victim=$(grep -o 'trainer 1 runs on this host (process [0-9]*' launch.log | "
      "head -1 | grep -o '[0-9]*$'); echo \"victim $victim\"; kill -KILL $victim; wait $pid; "
      "echo \"launch rc $?\")");
  std::string log = readFile(dir + "/launch.log");
  INFO(out << log);
  CHECK_THAT(out, Contains("launch rc 1") && !Contains("victim \n"));
  CHECK_THAT(log, Contains("trainer 0: trained 12600 steps"));
  CHECK_THAT(log, Contains("trainer.1 failed (killed by signal Killed; the other trainers trained "
                           "on without it)"));

  // The only trainer killed: nothing is left to train, so the launch ends at once (its pserver
  // would wait out its idle timeout, 10 minutes, for a trainer it cannot call lost).
  out = run("cd " + dir + " && (" + binDir() +
            "/oar-launch --server-num=1 --worker-num=1 --mode=async --timeout=60 model > one.log "
            "2>&1 & pid=$!; "
            "for i in $(seq 600); do grep -q 'step 1/' one.log && break; sleep 0.05; done; "
            "victim=$(grep -o 'trainer 0 runs on this host (process [0-9]*' one.log | head -1 | "
            "grep -o '[0-9]*$'); SECONDS=0; kill -KILL $victim; wait $pid; echo \"launch rc $?\"; "
            "echo \"ended within 30 s: $((SECONDS < 30))\")");
  log = readFile(dir + "/one.log");
  INFO(out << log);
  // A bound 15 times what it takes: the launcher's own --timeout (60 s) would end it otherwise.
  CHECK_THAT(out, Contains("launch rc 1") && Contains("ended within 30 s: 1"));
  CHECK_THAT(log, Contains("trainer.0 failed (killed by signal Killed); its last lines"));
}
