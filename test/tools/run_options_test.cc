// What a user changes at run time and reads back: data overrides, per-trainer metrics files with
// every metric and test evaluations, runs stopped by NaN, --version and flag spellings.
#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>

#include "executor/npy.h"
#include "runtime/cluster/launcher.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/ports.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using Catch::Matchers::Contains;

namespace {

/// Runs `cmd`; checks its exit status is `want`; returns its output.
std::string runExpecting(int want, const std::string &cmd) {
  std::string out;
  int rc = runCommand(cmd, out);
  INFO(cmd << "\n" << out);
  REQUIRE(rc == want);
  return out;
}

/// `n` CSV rows "a,b,y" with y = a + 2b.
std::string csvRows(int n) {
  std::string rows;
  for (int i = 0; i < n; ++i)
    rows += llvm::formatv("{0},{1},{2}\n", i % 3, i % 5, i % 3 + 2 * (i % 5)).str();
  return rows;
}

/// A linear model over two-column csv rows in `dir`, trained by `oar-model` flags `extra`.
void makeCsvModel(const std::string &dir, const std::string &extra) {
  writeFile(dir + "/rows.csv", csvRows(6));
  runExpecting(0, binDir() +
                      "/oar-model --model=linear --in=2 --out=1 --batch-size=2 --text "
                      "--format=csv --data=" +
                      dir + "/rows.csv " + extra + " -o " + dir);
}

std::vector<std::string> lines(const std::string &text) {
  llvm::SmallVector<llvm::StringRef, 64> parts;
  llvm::StringRef(text).split(parts, '\n', -1, false);
  return {parts.begin(), parts.end()};
}

std::string mnist() { return sourceDir() + "/data/mnist/"; }

} // namespace

TEST_CASE("oar-executor --data, --test-data, --epochs and --batch-size retarget a model file",
          "[tools]") {
  std::string dir = scratchDir("overrides");
  makeCsvModel(dir, "");
  writeFile(dir + "/more.csv", csvRows(30));
  writeFile(dir + "/test.csv", csvRows(7));
  std::string out =
      runExpecting(0, binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                          "/startup.pb --data " + dir + "/more.csv --test-data " + dir +
                          "/test.csv --epochs 3 --batch-size 5 --metrics " + dir + "/m.csv");
  CHECK_THAT(out, Contains("trained 18 steps")); // 30 rows / 5 x 3 epochs
  CHECK_THAT(out, Contains("test: 7 rows"));
  CHECK(lines(readFile(dir + "/m.csv")).size() == 1 + 18);
  // A value the program cannot take is refused by name.
  runExpecting(1, binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                      "/startup.pb --batch-size 0");
}

TEST_CASE("the metrics CSV has every declared metric and test evaluations (--eval-every)",
          "[tools]") {
  std::string dir = scratchDir("metrics_eval");
  std::string files =
      mnist() + "t10k-images-idx3-ubyte.gz," + mnist() + "t10k-labels-idx1-ubyte.gz";
  runExpecting(0, binDir() +
                      "/oar-model --model=mlp --in=784 --hidden=64 --out=10 "
                      "--loss=softmax_with_cross_entropy --optimizer=adam --lr=0.001 "
                      "--batch-size=200 --format=mnist_idx --data=" +
                      files + " --test-data=" + files + " -o " + dir);
  std::string out =
      runExpecting(0, binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                          "/startup.pb --metrics " + dir + "/m.csv --eval-every 25");
  CHECK_THAT(out, Contains("after step 24: test: 10000 rows"));
  std::vector<std::string> csv = lines(readFile(dir + "/m.csv"));
  REQUIRE(csv.size() == 1 + 50 + 2); // header, 50 steps, evaluations after steps 24 and 49
  CHECK(csv[0] == "step,epoch,phase,loss,accuracy_0.tmp_0,samples_per_sec");
  CHECK(llvm::StringRef(csv[1]).startswith("0,0,train,"));
  CHECK(llvm::StringRef(csv[26]).startswith("24,0,test,"));
  CHECK(llvm::StringRef(csv.back()).startswith("49,0,test,"));
  // The last evaluation is the model the run ends with: its accuracy matches the test line.
  llvm::SmallVector<llvm::StringRef, 8> fields;
  llvm::StringRef(csv.back()).split(fields, ',');
  double accuracy = 0;
  REQUIRE_FALSE(fields[4].getAsDouble(accuracy));
  CHECK(accuracy > 0.7);
  CHECK_THAT(out, Contains(llvm::formatv("accuracy_0.tmp_0 {0:f6}", accuracy).str()));
  runExpecting(1, binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                      "/startup.pb --eval-every soon");
}

TEST_CASE("oar-launch gives each trainer its own metrics file and passes data overrides",
          "[tools][e2e]") {
  std::string dir = scratchDir("launch_metrics");
  makeCsvModel(dir + "/model", "");
  writeFile(dir + "/more.csv", csvRows(40));
  runExpecting(0, binDir() +
                      "/oar-launch --server-num=1 --worker-num=2 --timeout=120 --data=" + dir +
                      "/more.csv --batch-size=4 --metrics=" + dir + "/m.csv " + dir + "/model");
  for (int t = 0; t < 2; ++t) { // 20 rows each, 4 a step: 5 steps, one clean row per step
    std::vector<std::string> csv = lines(readFile(dir + "/m.trainer" + std::to_string(t) + ".csv"));
    REQUIRE(csv.size() == 1 + 5);
    for (size_t i = 1; i < csv.size(); ++i)
      CHECK(
          std::regex_match(csv[i], std::regex(std::to_string(i - 1) + R"(,0,train,[^,]+,[^,]+)")));
  }
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/m.csv"));
}

TEST_CASE("NaN or inf in a data cell or a checkpoint is refused with the file", "[tools][errors]") {
  std::string dir = scratchDir("nan_input");
  makeCsvModel(dir, "");
  std::string args = "/oar-executor --main " + dir + "/main.pb --startup " + dir + "/startup.pb";
  writeFile(dir + "/bad.csv", "1,2,3\n4,nan,6\n");
  std::string out = runExpecting(1, binDir() + args + " --data " + dir + "/bad.csv");
  CHECK_THAT(out, Contains("bad.csv:2: field 2 is nan"));
  writeFile(dir + "/bad.csv", "1,2,3\n4,5,inf\n");
  out = runExpecting(1, binDir() + args + " --data " + dir + "/bad.csv");
  CHECK_THAT(out, Contains("bad.csv:2: field 3 is inf"));

  runExpecting(0, binDir() + args + " --save " + dir + "/ckpt");
  REQUIRE_OK(oar::writeNpy(dir + "/ckpt/fc_0.b_0.npy",
                           oar::Tensor::fromVector<float>({1}, {std::nanf("")})));
  out = runExpecting(1, binDir() + args + " --load " + dir + "/ckpt");
  CHECK_THAT(out, Contains("ckpt/fc_0.b_0.npy: element 0 of f32[1] is nan"));
}

TEST_CASE("a diverging run stops at the step whose loss went non-finite, naming the var",
          "[tools][errors]") {
  std::string dir = scratchDir("diverge");
  runExpecting(0, binDir() +
                      "/oar-model --model=linear --in=13 --out=1 --lr=5 --batch-size=20 "
                      "--format=uci_housing --data=" +
                      sourceDir() + "/data/uci_housing/housing.data -o " + dir);
  std::string args = "/oar-executor --main " + dir + "/main.pb --startup " + dir + "/startup.pb";
  std::string out = runExpecting(1, binDir() + args + " --save " + dir + "/ckpt");
  CHECK(std::regex_search(
      out, std::regex(R"(error: step \d+ \(epoch 0\): loss mean_0.tmp_0 is (nan|inf))")));
  // The squares overflow first; the fc output they square is still finite.
  CHECK_THAT(out, Contains("the first non-finite var is square_error_cost_0.tmp_0 (written by op "
                           "#2 square_error_cost)"));
  // Nothing saved from a failed run (the directory holds only the run's lock file).
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/ckpt/fc_0.w_0.npy"));
  out = runExpecting(0, binDir() + args + " --allow-nonfinite");
  CHECK(std::regex_search(out, std::regex("last loss (nan|inf)", std::regex::icase)));
}

TEST_CASE("a pserver refuses a gradient holding NaN or inf instead of applying it",
          "[tools][errors]") {
  // A rate this large makes the gradient NaN at step 2; the trainer, told to go on past a
  // non-finite loss, sends it anyway.
  std::string dir = scratchDir("nonfinite_gradient");
  runExpecting(0, binDir() +
                      "/oar-model --model=linear --in=13 --out=1 --lr=1e20 --batch-size=20 "
                      "--format=uci_housing --data=" +
                      sourceDir() + "/data/uci_housing/housing.data -o " + dir);
  for (const char *mode : {"sync", "async"}) {
    INFO(mode);
    std::string out = runExpecting(1, binDir() +
                                          "/oar-launch --server-num=1 --worker-num=1 --curve=false "
                                          "--timeout=120 --mode=" +
                                          mode + " " + dir + " -- --allow-nonfinite");
    CHECK(std::regex_search(out, std::regex(R"(refused send_var (fc_0\.[wb]_0@GRAD): gradient )"
                                            R"(\1 from trainer 0 for step \d+ holds (nan|inf) at )"
                                            R"(element \d+; it is not applied)")));
    // Told to skip, the pserver leaves those updates out, answers OK and the job runs to its
    // end (the rate still blows the weights up; what no update adds is a NaN).
    out = runExpecting(0, binDir() +
                              "/oar-launch --server-num=1 --worker-num=1 --curve=false "
                              "--timeout=120 --mode=" +
                              mode + " " + dir + " -- --allow-nonfinite --nonfinite-grads=skip");
    CHECK(std::regex_search(out, std::regex(R"(gradient fc_0\.[wb]_0@GRAD from trainer 0 for )"
                                            R"(step \d+ holds (nan|inf) at element \d+; its )"
                                            R"(update is skipped \(--nonfinite-grads=skip\))")));
    CHECK(std::regex_search(out, std::regex(R"(skipped \d+ update\(s\) holding NaN or inf)")));
  }
}

TEST_CASE("a pserver refuses a distributed table's rows holding NaN or inf instead of applying "
          "them",
          "[tools][errors][sparse]") {
  // wide_deep keeps its tables on the pservers; a rate this large makes the pushed rows
  // non-finite within a few steps, and the trainer, told to go on, pushes them anyway.
  std::string dir = scratchDir("nonfinite_rows");
  runExpecting(0, binDir() +
                      "/oar-model --model=wide_deep --optimizer=sgd --lr=1e30 "
                      "--batch-size=500 --hidden=16 --vocab=65536 --format=criteo --data=" +
                      oar::ctrData() + "/train.txt -o " + dir);
  std::string out = runExpecting(1, binDir() +
                                        "/oar-launch --server-num=1 --worker-num=1 --curve=false "
                                        "--timeout=120 --mode=async " +
                                        dir + " -- --allow-nonfinite");
  INFO(out);
  CHECK(std::regex_search(
      out, std::regex(R"(rejected push_rows (embedding_\d+\.w_0) from trainer 0 \(peer \w+\): )"
                      R"(rows of \1 from trainer 0 for step \d+ hold (nan|inf) \(key \d+\); )"
                      R"(they are not applied)")));
  out = runExpecting(0, binDir() +
                            "/oar-launch --server-num=1 --worker-num=1 --curve=false "
                            "--timeout=120 --mode=sync " +
                            dir + " -- --allow-nonfinite --nonfinite-grads=skip");
  CHECK(std::regex_search(out, std::regex(R"(rows of embedding_\d+\.w_0 from trainer 0 for step )"
                                          R"(\d+ hold (nan|inf) \(key \d+\); its update is )"
                                          R"(skipped)")));
}

TEST_CASE("a program that trains but names no loss is refused", "[tools][errors]") {
  std::string dir = scratchDir("no_loss");
  makeCsvModel(dir, "");
  std::string text = readFile(dir + "/main.pbtxt");
  size_t at = text.find("\nloss: ");
  REQUIRE(at != std::string::npos);
  text.erase(at + 1, text.find('\n', at + 1) - at);
  writeFile(dir + "/noloss.pbtxt", text);
  std::string out = runExpecting(1, binDir() + "/oar-executor --main " + dir +
                                        "/noloss.pbtxt --startup " + dir + "/startup.pb");
  CHECK_THAT(out, Contains("noloss.pbtxt: the program trains but names no loss var"));
}

TEST_CASE("every tool prints oar's version and takes hyphenated flags, underscores as aliases",
          "[tools]") {
  for (const char *tool :
       {"oar-model", "oar-executor", "oar-show", "oar-transpile", "oar-launch"}) {
    std::string out = runExpecting(0, binDir() + "/" + tool + " --version");
    CHECK_THAT(out, Contains(std::string(tool) + " (oar) 0."));
    CHECK_FALSE(llvm::StringRef(out).contains("LLVM"));
  }
  std::string dir = scratchDir("flag_spelling");
  makeCsvModel(dir, "");
  std::string transpile = binDir() + "/oar-transpile --main " + dir + "/main.pb --startup " + dir +
                          "/startup.pb --trainers 2 --pservers 127.0.0.1:1,127.0.0.1:2 --quiet ";
  runExpecting(0, transpile +
                      "--slice-var-up=false --min-block-size=4 --split-method=hash_name "
                      "--geo-k-steps=5 -o " +
                      dir + "/t1");
  runExpecting(0, transpile +
                      "--slice_var_up=false --min_block_size=4 --split_method=hash_name "
                      "--geo_k_steps=5 -o " +
                      dir + "/t2");
  CHECK(readFile(dir + "/t1/trainer.pb") == readFile(dir + "/t2/trainer.pb"));
  for (const char *flags : {"--server-num=0 --worker-num=1", "--server_num=0 --worker_num=1"}) {
    std::string out = runExpecting(1, binDir() + "/oar-launch " + flags + " " + dir);
    CHECK_THAT(out, Contains("need at least one server and one worker (got 0 and 1)"));
  }
}

TEST_CASE("an unknown flag beginning with h is an error, not the help and exit 0: a bad mode is "
          "refused once by oar-launch",
          "[tools][errors]") {
  for (const char *tool : {"oar-model", "oar-executor", "oar-show", "oar-transpile", "oar-launch",
                           "oar-export", "oar-predict", "oar-gen-ctr", "oar-keygen"}) {
    INFO(tool);
    // (--hybrid-tables is a flag of several tools now: a near miss of it is not.)
    std::string out = runExpecting(1, binDir() + "/" + tool + " --hybrid-table=sync x");
    CHECK(llvm::StringRef(out).trim() ==
          std::string(tool) + ": error: unknown flag --hybrid-table=sync (see --help)");
    CHECK_THAT(runExpecting(1, binDir() + "/" + tool + " -hosts"), Contains("unknown flag -hosts"));
    CHECK_THAT(runExpecting(0, binDir() + "/" + tool + " -h"),
               Contains("USAGE: " + std::string(tool)));
  }
  std::string dir = scratchDir("launch_bad_mode");
  makeCsvModel(dir, "");
  std::string out = runExpecting(1, binDir() + "/oar-launch --mode=syncc " + dir);
  CHECK(llvm::StringRef(out).trim() ==
        "oar-launch: error: mode \"syncc\" must be sync, async, geo or collective (or hybrid)");
}

TEST_CASE("a connect timeout reports the time actually waited", "[tools][errors]") {
  std::string dir = scratchDir("connect_timeout");
  makeCsvModel(dir, "");
  oar::UnservedPort nobodys;
  int port = nobodys.port();
  auto start = std::chrono::steady_clock::now();
  std::string out =
      runExpecting(1, binDir() + "/oar-executor --role trainer --trainers 1 --pservers 127.0.0.1:" +
                          std::to_string(port) + " --connect-timeout-ms 700 --main " + dir +
                          "/main.pb --startup " + dir + "/startup.pb");
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::smatch m;
  REQUIRE(std::regex_search(
      out, m, std::regex(R"(cannot reach pserver \S+ after \d+ attempts in ([0-9.]+) s)")));
  double said = std::stod(m[1]);
  CHECK(said >= 0.7);
  CHECK(said <= waited);
  CHECK(waited - said < 2.0); // the process's start and exit take the rest (slow when loaded)
}

/// A FIFO nobody writes, in scratch dir `name`: a tool given it as --main blocks opening it.
static std::string unwrittenFifo(const std::string &name) {
  std::string fifo = scratchDir(name) + "/main.pb";
  REQUIRE(runExpecting(0, "rm -f " + fifo + " && mkfifo " + fifo).empty());
  return fifo;
}

TEST_CASE("a tool's OpenMP threads wait passively unless the user chose a wait policy", "[tools]") {
  // The process's real environment is what libgomp read when it loaded; oar-executor opening
  // its --main (a FIFO nobody writes) holds it still while /proc shows that environment.
  std::string fifo = unwrittenFifo("wait_policy");
  auto policyOf = [&](const std::string &env) {
    return runExpecting(0,
                        "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT " + env + " " + binDir() +
                            "/oar-executor --main " + fifo + " --startup " + fifo +
                            " & pid=$!; for i in $(seq 100); do"
                            "  p=$(tr '\\0' '\\n' </proc/$pid/environ | grep '^OMP_WAIT_POLICY=');"
                            "  [ -n \"$p\" ] && break; sleep 0.05; done;"
                            " name=$(cat /proc/$pid/comm); { kill $pid; wait $pid; } 2>/dev/null;"
                            " echo \"policy:$p name:$name\"");
  };
  // Started again with the policy, it keeps its name (ps, top, pkill).
  CHECK_THAT(policyOf(""), Contains("policy:OMP_WAIT_POLICY=PASSIVE name:oar-executor\n"));
  CHECK_THAT(policyOf("OMP_WAIT_POLICY=ACTIVE"),
             Contains("policy:OMP_WAIT_POLICY=ACTIVE name:oar-executor\n"));
}

TEST_CASE("SIGTERM ends a node still opening its program", "[tools][errors]") {
  // Blocked opening --main (a FIFO nobody writes), after its stop handlers are installed: the
  // open is retried after a handler returns, so a handler that only set the stop flag left the
  // node running until SIGKILL (this hung a CI run of the wait-policy test above).
  std::string fifo = unwrittenFifo("stop_while_opening");
  std::string out = runExpecting(
      0,
      binDir() + "/oar-executor --main " + fifo + " --startup " + fifo +
          " & pid=$!; for i in $(seq 200); do"
          "  [ \"$(cat /proc/$pid/wchan 2>/dev/null)\" = wait_for_partner ] && break; sleep 0.05; "
          "done;"
          " echo \"blocked:$(cat /proc/$pid/wchan)\"; kill $pid; ended=no; for i in $(seq 100); do"
          "  s=$(awk '/^State/ {print $2}' /proc/$pid/status 2>/dev/null);" // gone once reaped
          "  if [ -z \"$s\" ] || [ \"$s\" = Z ]; then ended=yes; break; fi; sleep 0.05; done;"
          " if [ $ended = yes ]; then wait $pid; echo \"status:$?\"; else echo still-running;"
          " kill -9 $pid; wait $pid; fi 2>/dev/null");
  CHECK_THAT(out, Contains("blocked:wait_for_partner\n")); // it did reach the open
  CHECK_THAT(out, Contains("status:143\n"));               // 128 + SIGTERM: ended by the signal
}

TEST_CASE("a save directory another running job holds is refused, alone or in a job",
          "[tools][errors]") {
  std::string dir = scratchDir("save_held");
  makeCsvModel(dir, "");
  std::string ckpt = dir + "/ckpt", held = ckpt + "/.oar-save.other-job.lock";
  runExpecting(0, "mkdir -p " + ckpt);
  // A node of another job holds the directory (as a running oar node does) while these run.
  auto whileHeld = [&](const std::string &cmd) {
    // flock -o: flock itself holds the lock, so ending it (and its sleep) releases it.
    return "flock -o -s " + held + " sleep 30 >/dev/null 2>&1 & h=$!; for i in $(seq 100); do " +
           "flock -n -x " + held + " true || break; sleep 0.05; done; " + cmd +
           " 2>&1; rc=$?; pkill -P $h; kill $h; wait $h; exit $rc";
  };
  std::string single = binDir() + "/oar-executor --main " + dir + "/main.pb --startup " + dir +
                       "/startup.pb --save " + ckpt;
  std::string out = runExpecting(1, whileHeld(single));
  CHECK_THAT(out, Contains("save directory " + ckpt +
                           " is in use by another running job (other-job, " + held + ")"));
  out = runExpecting(1, whileHeld(binDir() + "/oar-launch --server-num=1 --worker-num=1 --save " +
                                  ckpt + " " + dir));
  CHECK_THAT(out, Contains("is in use by another running job (other-job,"));
  CHECK_FALSE(llvm::sys::fs::exists(ckpt + "/fc_0.w_0.npy"));
  // Once that job has ended, its lock file is stale: the next save clears it and goes ahead.
  runExpecting(0, single);
  CHECK(llvm::sys::fs::exists(ckpt + "/fc_0.w_0.npy"));
  CHECK_FALSE(llvm::sys::fs::exists(held));
}
