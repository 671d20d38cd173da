// oar-model's CTR models (wide_deep, deepfm) on oar-gen-ctr's data: one machine, and 2 pservers x
// 2 trainers with the tables on the pservers.
#include <unistd.h>

#include "api/recipes.h"
#include "executor/executor.h"
#include "ops/verify.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "tools/common/ctr_generator.h"
#include "train/training_loop.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

using namespace oar;
using Catch::Matchers::Contains;


TEST_CASE("id_mod folds keys into a table's rows and refuses a negative key", "[ops][ctr]") {
  Executor exec;
  Scope scope;
  scope.get("x") = Tensor::fromVector<int64_t>({4}, {0, 7, 12, int64_t(1) << 62});
  proto::Op op = makeOp("id_mod", {{"X", {"x"}}}, {{"Out", {"y"}}}, {{"num_buckets", int64_t(5)}});
  REQUIRE_OK(exec.runOp(op, scope, "id_mod test"));
  const int64_t *y = scope.get("y").data<int64_t>();
  CHECK(std::vector<int64_t>(y, y + 4) == std::vector<int64_t>{0, 2, 2, (int64_t(1) << 62) % 5});
  scope.get("x") = Tensor::fromVector<int64_t>({2}, {3, -4});
  CHECK_THAT(errorText(exec.runOp(op, scope, "id_mod test")),
             Contains("key -4 at position 1 is negative"));
}

TEST_CASE("wide_deep and deepfm learn oar-gen-ctr's clicks on one machine", "[tools][ctr]") {
  for (const char *model : {"wide_deep", "deepfm"}) {
    RecipeSpec s;
    s.model = model;
    s.format = "criteo";
    s.data = {ctrData() + "/train.txt"};
    s.testData = {ctrData() + "/test.txt"};
    s.vocab = 1 << 16;
    applyCtrDefaults(s, {});
    s.hidden = {64, 32};
    ModelBuilder m = requireValue(buildRecipe(s));
    REQUIRE_OK(verifyProgram(m.main(), model));
    Executor exec;
    Scope scope;
    REQUIRE_OK(exec.run(m.startup(), scope));
    TrainOptions opts;
    auto steps = requireValue(trainLoop(exec, m.main(), scope, opts));
    REQUIRE(steps.size() == 40);
    EvalResult eval = requireValue(evaluate(exec, m.main(), scope, m.main().test_feed()));
    INFO(model);
    CHECK(eval.rows == 10000);
    REQUIRE(eval.metrics.size() == 1);
    CHECK(eval.metrics[0].first == "auc");
    CHECK(eval.metrics[0].second > 0.70); // the teacher's is about 0.80
    CHECK(steps.back().loss < steps.front().loss);
  }
}

TEST_CASE("wide_deep with its tables on 2 pservers reaches the single machine's AUC",
          "[e2e][tools][ctr]") {
  std::string dir = scratchDir("ctr_models_launch");
  std::string data = " --format=criteo --data=" + ctrData() +
                     "/train.txt --test-data=" + ctrData() +
                     "/test.txt --vocab=65536 --hidden=64,32 ";
  run(binDir() + "/oar-model --model=wide_deep" + data + "-o " + dir + "/single");
  // Two trainers of 500 rows a step see the single machine's 1000-row batches.
  run(binDir() + "/oar-model --model=wide_deep --batch-size=500" + data + "-o " + dir + "/dist");
  double single = aucOf(run(binDir() + "/oar-executor --main " + dir + "/single/main.pb " +
                            "--startup " + dir + "/single/startup.pb"));
  for (const char *mode : {"sync", "async"}) {
    std::string out = run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --timeout=300 " +
                          "--mode=" + mode + " " + dir + "/dist");
    INFO(mode << "\n" << out);
    CHECK_THAT(out, Contains("distributed tables hold"));
    CHECK(std::abs(aucOf(out) - single) < 0.02);
  }
}

TEST_CASE("tables saved by 2 pservers load on 3 and give the same test predictions",
          "[e2e][tools][ctr]") {
  std::string dir = scratchDir("ctr_models_checkpoint");
  run(binDir() + "/oar-model --model=deepfm --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=500 -o " + dir + "/model");
  std::string trained = run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=sync " +
                            "--timeout=300 --save " + dir + "/ckpt " + dir + "/model");
  // Each pserver wrote its rows of a table as one part.
  std::string parts = dir + "/ckpt/tables/embedding_1.w_0/";
  CHECK(llvm::sys::fs::exists(parts + "part.0-of-2.keys.npy"));
  CHECK(llvm::sys::fs::exists(parts + "part.1-of-2.values.npy"));
  CHECK_FALSE(llvm::sys::fs::exists(parts + "shard.0.keys.npy"));
  std::string loaded =
      run(binDir() + "/oar-launch --server-num=3 --worker-num=2 --mode=sync " +
          "--timeout=300 --load " + dir + "/ckpt " + dir + "/model -- --eval-only");
  CHECK_THAT(loaded, Contains("loaded"));
  CHECK(testLine(loaded) == testLine(trained));
}

TEST_CASE("sync wide_deep gives the same test loss and AUC on 1, 2 and 3 pservers",
          "[e2e][tools][ctr]") {
  std::string dir = scratchDir("ctr_models_pservers");
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=500 -o " + dir + "/model");
  std::vector<std::string> lines;
  for (const char *servers : {"1", "2", "3"}) {
    std::string out = run(binDir() + "/oar-launch --server-num=" + servers +
                          " --worker-num=2 --mode=sync --timeout=300 " + dir + "/model");
    size_t at = out.find("test: ");
    REQUIRE(at != std::string::npos);
    lines.push_back(out.substr(at, out.find('\n', at) - at));
  }
  CHECK(lines[0] == lines[1]);
  CHECK(lines[0] == lines[2]);
}

TEST_CASE("the C++ examples wide_deep and deepfm train with their tables on a pserver",
          "[e2e][tools][ctr]") {
  for (const char *example : {"wide_deep", "deepfm"}) {
    std::string dir = scratchDir(std::string("ctr_example_") + example);
    run(binDir() + "/example_" + example + " " + dir + " " + ctrData() + "/train.txt " + ctrData() +
        "/test.txt");
    std::string out = run(binDir() + "/oar-launch --server-num=1 --worker-num=1 --mode=async " +
                          "--timeout=300 " + dir);
    INFO(out);
    CHECK_THAT(out, Contains("trained 40 steps"));
    CHECK(aucOf(out) > 0.7);
  }
}

TEST_CASE("local tables (--local-tables) train in sync and async, and sync gives the same test "
          "line on 1 and 2 "
          "pservers",
          "[e2e][tools][ctr]") {
  // The tables are dense params sliced on the pservers: a trainer sends the rows it looked up
  // as a dense gradient (a selected-rows gradient once stopped the job at step 0).
  std::string dir = scratchDir("ctr_local_tables");
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=500 --local-tables -o " + dir + "/model");
  std::map<std::string, std::string> lines;
  for (const char *mode : {"sync", "async"})
    for (const char *servers : {"1", "2"}) {
      std::string out = run(binDir() + "/oar-launch --server-num=" + servers +
                            " --worker-num=2 --timeout=300 --mode=" + mode + " " + dir + "/model");
      INFO(mode << " on " << servers << " pserver(s)\n" << out);
      CHECK_THAT(out, Contains("trainer 0: trained 40 steps"));
      CHECK(aucOf(out) > 0.8);
      lines[std::string(mode) + servers] = testLine(out);
    }
  CHECK(lines["sync1"] == lines["sync2"]);
}
