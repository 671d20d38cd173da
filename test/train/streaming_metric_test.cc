// Evaluation of a metric that keeps state across batches (auc): the test rows alone, from zeros.
#include <fstream>

#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"
#include "train/training_loop.h"

using namespace oar;

TEST_CASE("evaluate reports a streaming auc over the test rows alone and keeps training's state",
          "[executor][auc]") {
  std::string dir = scratchDir("streaming_metric");
  std::vector<double> scores;
  std::vector<uint8_t> labels;
  std::ofstream csv(dir + "/test.csv");
  for (int i = 0; i < 10; ++i) {
    scores.push_back(0.05 + 0.09 * i);
    labels.push_back(i % 3 != 0 && i != 4);
    csv << scores.back() << "," << int(labels.back()) << "\n";
  }
  csv.close();
  proto::Program main = newProgram();
  proto::Block &b = *main.mutable_blocks(0);
  declareVar(b, "p", proto::F32, {-1, 1});
  declareVar(b, "y", proto::I64, {-1, 1});
  declareVar(b, "pos", proto::I64, {4096}).set_persistable(true);
  declareVar(b, "neg", proto::I64, {4096}).set_persistable(true);
  declareVar(b, "auc", proto::F32, {1});
  *b.add_ops() = makeOp(
      "auc", {{"Predict", {"p"}}, {"Label", {"y"}}, {"StatPos", {"pos"}}, {"StatNeg", {"neg"}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {"pos"}}, {"StatNegOut", {"neg"}}});
  main.add_metrics("auc");
  proto::DataFeed &feed = *main.mutable_test_feed();
  feed.set_format("csv");
  feed.add_files(dir + "/test.csv");
  for (std::string column : {"p", "y"})
    feed.add_columns(column);
  feed.set_batch_size(3);
  feed.set_epochs(1);

  Scope scope;
  // Counts left by training: every bucket has seen positives and negatives.
  std::vector<int64_t> trained(4096, 5);
  scope.get("pos") = Tensor::fromVector<int64_t>({4096}, trained);
  scope.get("neg") = Tensor::fromVector<int64_t>({4096}, trained);
  Executor exec;
  double want = sortedScoreAuc(scores, labels);
  for (int round = 0; round < 2; ++round) {
    EvalResult r = requireValue(evaluate(exec, main, scope, feed));
    CHECK(r.rows == 10);
    REQUIRE(r.metrics.size() == 1);
    CHECK(r.metrics[0].second == Approx(want).margin(1e-6)); // not an average over batches
    CHECK(scope.find("pos")->toVector<int64_t>() == trained);
    CHECK(scope.find("neg")->toVector<int64_t>() == trained);
  }
}
