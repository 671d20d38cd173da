// The training toolkit at run time, as a user runs it: --lr over the program's rate, --keep-best
// and --early-stop, and evaluation of batch norm and dropout (running statistics, no dropping).
#include <regex>

#include "executor/npy.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// oar-model flags of the MNIST MLP over the momentum fixture's 2048 rows (also its test set).
std::string mlpArgs(const Fixture &f, const std::string &extra) {
  std::string data = f.dir + "/x.npy," + f.dir + "/y.npy";
  return "--model=mlp --in=784 --hidden=128,64 --out=10 --loss=softmax_with_cross_entropy "
         "--batch-size=64 --format=npy --data=" +
         data + " --test-data=" + data + " " + extra;
}

std::string executor(const std::string &model, const std::string &flags) {
  return binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
         "/startup.pb " + flags;
}

/// Every "after step N: test: R rows, loss L" line: (N, L as printed).
std::vector<std::pair<int, std::string>> evalLosses(const std::string &out) {
  std::vector<std::pair<int, std::string>> evals;
  std::regex line(R"(after step (\d+): test: \d+ rows, loss ([0-9.]+))");
  for (std::sregex_iterator it(out.begin(), out.end(), line), end; it != end; ++it)
    evals.push_back({std::stoi((*it)[1]), (*it)[2]});
  return evals;
}

} // namespace

TEST_CASE("oar-executor --lr trains with the given base rate: the bits of a model built with it",
          "[tools][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("toolkit_lr");
  std::string common = "--optimizer=momentum --lr-schedule=step --lr-decay-steps=5 "
                       "--lr-decay-rate=0.5 --epochs=1";
  makeModel(dir + "/slow", mlpArgs(f, common + " --lr=0.01"));
  makeModel(dir + "/fast", mlpArgs(f, common + " --lr=0.05"));
  run(executor(dir + "/fast", "--load " + f.dir + "/init --save " + dir + "/built"));
  run(executor(dir + "/slow", "--load " + f.dir + "/init --lr=0.05 --save " + dir + "/flag"));
  run(executor(dir + "/slow", "--load " + f.dir + "/init --save " + dir + "/plain"));
  for (const std::string &p : f.params) {
    INFO(p);
    Tensor built = requireValue(readNpy(dir + "/built/" + p + ".npy"));
    CHECK(sameBits(requireValue(readNpy(dir + "/flag/" + p + ".npy")), built));
    CHECK(!sameBits(requireValue(readNpy(dir + "/plain/" + p + ".npy")), built));
  }
  CHECK_THAT(runFailing(executor(dir + "/slow", "--lr=-1")), Contains("--lr -1"));
}

TEST_CASE("oar-executor --keep-best saves the best evaluation's params in SAVE/best, which evaluate to it",
          "[tools][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("toolkit_keep_best");
  makeModel(dir + "/m", mlpArgs(f, "--optimizer=momentum --lr=0.2 --epochs=3"));
  std::string out = run(executor(dir + "/m", "--load " + f.dir + "/init --eval-every=8 "
                                             "--keep-best=loss --save " +
                                                 dir + "/s"));
  auto evals = evalLosses(out);
  REQUIRE(evals.size() == 12); // 3 epochs of 2048 rows: 96 steps, every 8th
  auto best = std::min_element(evals.begin(), evals.end(), [](const auto &a, const auto &b) {
    return std::stod(a.second) < std::stod(b.second);
  });
  REQUIRE(best != evals.end() - 1); // the last is not the best: a test of the last would pass
  CHECK_THAT(out, Contains("best loss " + best->second + " after step " +
                           std::to_string(best->first)));
  std::string again = run(executor(dir + "/m", "--load " + dir + "/s/best --eval-only"));
  CHECK_THAT(again, Contains("loss " + best->second));
  CHECK_THAT(runFailing(executor(dir + "/m", "--keep-best=auc --eval-every=8 --save " + dir +
                                                 "/x")),
             Contains("--keep-best=auc: the model reports no such metric"));
  CHECK_THAT(runFailing(executor(dir + "/m", "--keep-best=loss --save " + dir + "/x")),
             Contains("give --eval-every"));
}

TEST_CASE("oar-executor --early-stop ends training after N evaluations without improvement",
          "[tools][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("toolkit_early_stop");
  makeModel(dir + "/m", mlpArgs(f, "--optimizer=momentum --lr=0.2 --epochs=20"));
  std::string out =
      run(executor(dir + "/m", "--load " + f.dir + "/init --eval-every=8 --early-stop=2"));
  auto evals = evalLosses(out);
  REQUIRE(evals.size() >= 3);
  REQUIRE(evals.size() < 80); // 640 steps would give 80 evaluations
  // The last two evaluations are no better than the best before them, and training ends there.
  double bestBefore = 1e300;
  for (size_t i = 0; i + 2 < evals.size(); ++i)
    bestBefore = std::min(bestBefore, std::stod(evals[i].second));
  CHECK(std::stod(evals[evals.size() - 2].second) >= bestBefore);
  CHECK(std::stod(evals.back().second) >= bestBefore);
  CHECK_THAT(out, Contains("stopped early after step " + std::to_string(evals.back().first) +
                           ": 2 evaluations without a better loss"));
  CHECK_THAT(out, Contains("trained " + std::to_string(evals.back().first + 1) + " steps"));
}

TEST_CASE("batch norm and dropout evaluate with the running statistics and no dropping, whatever "
          "the test batch",
          "[tools][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("toolkit_eval_mode");
  makeModel(dir + "/m", mlpArgs(f, "--optimizer=adam --lr=0.003 --norm=batch --dropout=0.3"));
  run(executor(dir + "/m", "--save " + dir + "/s"));
  // In training mode a batch of one row has no variance and draws its own masks.
  std::string one = run(executor(dir + "/m", "--load " + dir + "/s --eval-only --batch-size=1"));
  std::string all =
      run(executor(dir + "/m", "--load " + dir + "/s --eval-only --batch-size=2048"));
  std::regex loss(R"(test: 2048 rows, loss ([0-9.]+))");
  std::smatch a, b;
  REQUIRE(std::regex_search(one, a, loss));
  REQUIRE(std::regex_search(all, b, loss));
  CHECK(std::abs(std::stod(a[1]) - std::stod(b[1])) <= 1e-5 * std::stod(b[1]));
}

TEST_CASE("a schedule on a distributed table is refused naming the op and the table",
          "[tools][toolkit]") {
  std::string dir = scratchDir("toolkit_table_schedule");
  makeModel(dir + "/m", "--model=wide_deep --format=criteo --data=none.txt --vocab=1000 "
                        "--hidden=8 --lr-schedule=cosine --lr-decay-steps=10");
  // The recipe schedules its dense params only (ctr_recipe_defaults_test.cc); a program that
  // schedules a table too (built so by hand) is refused: its update gets a dense one's counter.
  proto::Program main = requireValue(loadProgram(dir + "/m/main.pb"));
  const proto::Op *scheduled = nullptr;
  proto::Op *table = nullptr;
  for (proto::Op &op : *main.mutable_blocks(0)->mutable_ops()) {
    if (op.type() != "adagrad")
      continue;
    bool hasStep = !opInputs(op, "Step").empty();
    if (hasStep && !scheduled)
      scheduled = &op;
    if (!hasStep && !table && llvm::StringRef(opInputs(op, "Param")[0]).startswith("embedding_"))
      table = &op;
  }
  REQUIRE(scheduled);
  REQUIRE(table);
  for (const proto::Attr &a : scheduled->attrs())
    if (llvm::StringRef(a.name()).startswith("lr_") || a.name() == "warmup_steps")
      *table->add_attrs() = a;
  for (const proto::Slot &in : scheduled->inputs())
    if (in.slot() == "Step")
      *table->add_inputs() = in;
  for (const proto::Slot &out : scheduled->outputs())
    if (out.slot() == "StepOut")
      *table->add_outputs() = out;
  REQUIRE_OK(saveProgram(main, dir + "/m/main.pb", "toolkit_flags_test"));
  std::string out = runFailing(binDir() + "/oar-transpile --main " + dir + "/m/main.pb --startup " +
                               dir + "/m/startup.pb --mode=sync --trainers=2 --pservers=" +
                               "127.0.0.1:1,127.0.0.1:2 -o " + dir + "/t");
  CHECK_THAT(out, Contains("updates distributed table embedding_"));
  CHECK_THAT(out, Contains("a pserver's table keeps a constant rate"));
}
