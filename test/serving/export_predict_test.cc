// A trained model out: oar-export from a checkpoint of any layout, then oar-predict (and
// oar::Predictor) give the training job's own scores.
#include <cmath>
#include <thread>

#include "feed/batch_source.h"
#include "serving/predictor.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// wide_deep on the test click logs; `batch` rows a step.
std::string ctrModel(const std::string &dir, const std::string &batch,
                     const std::string &extra = "") {
  std::string model = dir + "/model";
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=" + batch + " " + extra + " -o " + model);
  return model;
}

/// Exports `save` of `model`, scores the test file with oar-predict, and checks the scores
/// against `reference` (the training job's own, rtol 1e-5) and their AUC against `auc` (1e-4).
void checkServedScores(const std::string &dir, const std::string &model, const std::string &save,
                       const std::string &reference, double auc) {
  run(binDir() + "/oar-export " + model + " --load " + save + " -o " + dir + "/export");
  std::string predicted = dir + "/predicted.tsv";
  run(binDir() + "/oar-predict " + dir + "/export --data " + ctrData() + "/test.txt -o " +
      predicted + " --num-threads 2");
  std::vector<float> want = readScores(reference), got = readScores(predicted);
  REQUIRE(got.size() == 10000);
  REQUIRE(want.size() == got.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / std::max(1e-30, std::abs(1.0 * want[i])));
  INFO("largest relative difference from the job's own scores: " << worst);
  CHECK(worst <= 1e-5);
  double served = bucketedAuc(got, criteoLabels(ctrData() + "/test.txt"));
  INFO("the job's test auc " << auc << ", the served scores' " << served);
  CHECK(std::abs(served - auc) <= 1e-4);
}

} // namespace

TEST_CASE("scores served from a one-machine save equal its own evaluation's", "[e2e][serving]") {
  std::string dir = scratchDir("serve_single");
  std::string model = ctrModel(dir, "1000");
  std::string out = run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
                        "/startup.pb --save " + dir + "/save --test-scores " + dir + "/job.tsv");
  checkServedScores(dir, model, dir + "/save", dir + "/job.tsv", aucOf(out));
}

TEST_CASE("scores served from the saves of 2 and 3 sync pservers equal the job's own",
          "[e2e][serving]") {
  for (const char *servers : {"2", "3"}) {
    std::string dir = scratchDir(std::string("serve_sync_") + servers);
    std::string model = ctrModel(dir, "500");
    std::string out = run(binDir() + "/oar-launch --server-num=" + servers +
                          " --worker-num=2 --mode=sync --timeout=300 --save " + dir + "/save " +
                          model + " -- --test-scores " + dir + "/job.tsv");
    INFO(servers << " pservers\n" << out);
    checkServedScores(dir, model, dir + "/save", dir + "/job.tsv", aucOf(out));
  }
}

TEST_CASE("scores served from an async job's save equal an evaluation of that save",
          "[e2e][serving]") {
  // Trainer 1 may still push while trainer 0 evaluates: the save is what the pservers end with.
  std::string dir = scratchDir("serve_async");
  std::string model = ctrModel(dir, "500");
  run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=async --timeout=300 --save " +
      dir + "/save " + model);
  std::string eval =
      run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
          "/startup.pb --load " + dir + "/save --eval-only --test-scores " + dir + "/eval.tsv");
  checkServedScores(dir, model, dir + "/save", dir + "/eval.tsv", aucOf(eval));
}

TEST_CASE("oar::Predictor answers batches from several threads at once with the scores of one",
          "[e2e][serving]") {
  std::string dir = scratchDir("serve_threads");
  std::string model = ctrModel(dir, "1000");
  run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
      "/startup.pb --save " + dir + "/save");
  run(binDir() + "/oar-export " + model + " --load " + dir + "/save -o " + dir + "/export");
  auto predictor = requireValue(Predictor::load(dir + "/export"));
  REQUIRE(predictor->inputs() == std::vector<std::string>{"sparse", "dense"});
  REQUIRE(predictor->outputs().size() == 1);
  // The test rows as the export's feed reads them, in batches of 256.
  proto::DataFeed feed = predictor->program().test_feed();
  feed.set_batch_size(256);
  auto source = requireValue(openBatchSource(feed, predictor->program().blocks(0)));
  std::vector<std::vector<Tensor>> batches;
  std::vector<Tensor> batch;
  int64_t epoch = 0;
  while (requireValue(source->next(batch, epoch))) {
    std::vector<Tensor> inputs;
    for (const std::string &in : predictor->inputs()) {
      auto at = std::find(source->columns().begin(), source->columns().end(), in);
      inputs.push_back(batch[at - source->columns().begin()].clone());
    }
    batches.push_back(std::move(inputs));
  }
  REQUIRE(batches.size() == 40);
  std::vector<Tensor> alone;
  for (const auto &inputs : batches)
    alone.push_back(requireValue(predictor->predict(inputs))[0]);
  std::vector<Tensor> together(batches.size());
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (size_t b = t; b < batches.size(); b += 4) {
        auto out = predictor->predict(batches[b]);
        if (!out)
          failures[t] = llvm::toString(out.takeError());
        else
          together[b] = (*out)[0];
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (const std::string &f : failures)
    CHECK(f.empty());
  for (size_t b = 0; b < batches.size(); ++b) {
    REQUIRE(together[b].numel() == alone[b].numel());
    CHECK(std::memcmp(together[b].raw(), alone[b].raw(), alone[b].bytes()) == 0);
  }
  // A batch of the wrong shape is refused by name.
  std::vector<Tensor> wrong = batches[0];
  wrong[1] = Tensor(proto::F32, {256, 12});
  CHECK_THAT(errorText(predictor->predict(wrong)),
             Contains("input dense is f32[256,12] but the model takes f32[-1,13]"));
}

TEST_CASE("oar-export shrinks tables, writes float16 values, and oar-show describes the export",
          "[e2e][serving]") {
  std::string dir = scratchDir("serve_shrink");
  std::string model = ctrModel(dir, "500");
  std::string out = run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=sync " +
                        "--timeout=300 --save " + dir + "/save " + model + " -- --test-scores " +
                        dir + "/job.tsv");
  double auc = aucOf(out);
  std::string exported = run(binDir() + "/oar-export " + model + " --load " + dir + "/save -o " +
                             dir + "/export --min-pushes 3 --f16");
  CHECK_THAT(exported, Contains("dropped"));
  std::string shown = run(binDir() + "/oar-show " + dir + "/export");
  CHECK_THAT(shown, Contains("inputs: sparse i64[-1,26] dense f32[-1,13]"));
  CHECK_THAT(shown, Contains("(f16 on disk)"));
  CHECK_THAT(shown, Contains("lookup_sorted_table"));
  run(binDir() + "/oar-predict " + dir + "/export --data " + ctrData() + "/test.txt -o " + dir +
      "/shrunk.tsv");
  std::vector<float> full = readScores(dir + "/job.tsv"), shrunk = readScores(dir + "/shrunk.tsv");
  REQUIRE(shrunk.size() == full.size());
  size_t differ = 0;
  for (size_t i = 0; i < full.size(); ++i)
    differ += full[i] != shrunk[i];
  CHECK(differ > 0); // rows seen once or twice now read their initial weights
  CHECK(std::abs(bucketedAuc(shrunk, criteoLabels(ctrData() + "/test.txt")) - auc) < 0.01);
  // oar-executor --predict serves the checkpoint itself, the scores of the job.
  run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
      "/startup.pb --load " + dir + "/save --predict " + dir + "/direct.tsv");
  CHECK(readScores(dir + "/direct.tsv") == readScores(dir + "/job.tsv"));
}
