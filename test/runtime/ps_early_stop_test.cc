// --keep-best and --early-stop in the modes a CTR user runs: a PS job's trainer 0 evaluates,
// asks the pservers to write their tables' rows beside its dense params (SAVE_BEST), and stops
// the job (STOP), which the other trainers learn from their next reply; a hybrid job's
// trainers agree at each evaluation's step.
#include <future>
#include <regex>

#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/runtime/pserver_job.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// wide_deep on the test click logs for up to 20 epochs: it overfits, so early stopping ends it.
std::string overfittingModel(const std::string &dir) {
  std::string model = dir + "/model";
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=200 --epochs=20 --lr=0.1 -o " + model);
  return model;
}

/// The best evaluation's AUC and that of its save loaded again.
struct Stopped {
  double bestAuc = 0, reloadedAuc = 0;
};

/// Runs the overfitting model as a 2x2 `mode` job with early stopping and the best kept (in
/// scratch directory `name`); checks what every mode must show, and reloads SAVE/best.
Stopped stopEarly(const std::string &name, const std::string &mode) {
  std::string dir = scratchDir(name);
  std::string model = overfittingModel(dir);
  std::string out = run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=" + mode +
                        " --timeout=300 --eval-every=50 --early-stop=2 --keep-best=auc --save " +
                        dir + "/s " + model);
  INFO(out);
  CHECK_THAT(out, Contains("oar-launch: all 4 nodes finished"));
  std::smatch stopped, best;
  REQUIRE(std::regex_search(out, stopped,
                            std::regex(R"(stopped early after step (\d+): 2 evaluations)")));
  REQUIRE(std::regex_search(out, best, std::regex(R"(best auc ([0-9.]+) after step)")));
  int64_t step = std::stoll(stopped[1]);
  CHECK(step < 1999); // 20 epochs of 100 steps a trainer
  CHECK_THAT(out, Contains("trainer 0: trained " + std::to_string(step + 1) + " steps"));
  CHECK_THAT(out, Contains("trainer 1: trained"));
  CHECK(llvm::sys::fs::is_directory(dir + "/s/best/tables"));
  double reloaded = aucOf(run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " +
                              model + "/startup.pb --load " + dir + "/s/best --eval-only"));
  return {std::stod(best[1]), reloaded};
}

} // namespace

TEST_CASE("a 2x2 async PS job stops early on trainer 0's decision and keeps the best evaluation "
          "with the pservers' table rows",
          "[e2e][runtime][toolkit][ctr]") {
  Stopped s = stopEarly("ps_early_stop_async", "async");
  // The others push while trainer 0 evaluates: the saved rows are the pservers' a moment later
  // than the evaluation's.
  INFO("best " << s.bestAuc << ", reloaded " << s.reloadedAuc);
  CHECK(std::abs(s.reloadedAuc - s.bestAuc) < 0.01);
}

TEST_CASE("a hybrid job's trainers stop early at the same step, and its best save reloads the "
          "best evaluation",
          "[e2e][runtime][toolkit][ctr][collective]") {
  Stopped s = stopEarly("ps_early_stop_hybrid", "hybrid");
  // Both trainers wait at the evaluation's step, and the tables train at the step's barrier:
  // the best save is the evaluated model.
  CHECK(s.reloadedAuc == Approx(s.bestAuc).margin(1e-6));
}

TEST_CASE("a pserver takes a stop and a best save from trainer 0 only, refuses a best save it "
          "was not started for, and tells every trainer of the stop in its next reply",
          "[runtime][toolkit]") {
  test::OnePserverJob job;
  std::future<std::string> server = job.serve();
  runtime::Communicator t0(0, {job.endpoint}, test::shortTimeouts()),
      t1(1, {job.endpoint}, test::shortTimeouts());
  REQUIRE_OK(t0.connect(job.job()));
  REQUIRE_OK(t1.connect(job.job()));
  CHECK_THAT(errorText(t1.stopJob()),
             Contains("stopping the job is trainer 0's decision, not trainer 1's"));
  CHECK_THAT(errorText(t1.saveBest()),
             Contains("a best save is trainer 0's to ask for, not trainer 1's"));
  CHECK_THAT(errorText(t0.saveBest()),
             Contains("this pserver has no best save to write: start it with --keep-best and "
                      "--save"));
  CHECK_FALSE(t1.jobStopped());
  REQUIRE_OK(t0.stopJob());
  CHECK(t0.jobStopped());
  REQUIRE_OK(t1.complete());
  CHECK(t1.jobStopped()); // learnt from the reply to its COMPLETE
  REQUIRE_OK(t0.complete());
  CHECK(server.get() == "");
}
