// Training end to end on a streamed criteo feed, with a streaming auc metric.
#include "api/layers.h"
#include "api/optimizer.h"
#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"
#include "train/training_loop.h"

using namespace oar;

TEST_CASE("a model trains on a streamed criteo feed and reports its test auc",
          "[executor][criteo]") {
  std::string dir = scratchDir("criteo_train");
  CtrGenOptions gen;
  gen.trainLines = 3000;
  gen.testLines = 1000;
  gen.seed = 3;
  requireValue(generateCtr(gen, dir));

  // Logistic regression on the 13 dense features.
  ModelBuilder m;
  std::string label = m.data("label", {1}), dense = m.data("dense", {13}),
              sparse = m.data("sparse", {26}, proto::I64);
  std::string logits = m.fc(dense, 1);
  std::string loss = m.mean(m.sigmoidCrossEntropyWithLogits(logits, label));
  std::string prob = m.activation(logits, "sigmoid");
  std::string pos = m.createPersistable("auc.pos", {4096}, 0, proto::I64),
              neg = m.createPersistable("auc.neg", {4096}, 0, proto::I64);
  proto::Block &block = *m.main().mutable_blocks(0);
  declareVar(block, "auc", proto::F32, {1});
  *block.add_ops() = makeOp(
      "auc", {{"Predict", {prob}}, {"Label", {label}}, {"StatPos", {pos}}, {"StatNeg", {neg}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {pos}}, {"StatNegOut", {neg}}});
  m.addMetric("auc");
  requireValue(SGD(0.05f).minimize(m, loss));
  m.setTrainFeed({.format = "criteo",
                  .files = {dir + "/train.txt"},
                  .columns = {label, dense, sparse},
                  .batchSize = 100,
                  .epochs = 2,
                  .shuffle = true});
  m.setTestFeed({.format = "criteo",
                 .files = {dir + "/test.txt"},
                 .columns = {label, dense, sparse},
                 .batchSize = 128});
  REQUIRE_OK(m.status());

  Executor exec;
  Scope scope;
  REQUIRE_OK(exec.run(m.startup(), scope));
  TrainOptions opts;
  opts.evalEveryEpoch = true;
  std::vector<EvalResult> evals;
  opts.onEval = [&](const StepReport &, const EvalResult &e) { evals.push_back(e); };
  std::vector<StepReport> steps = requireValue(trainLoop(exec, m.main(), scope, opts));
  CHECK(steps.size() == 60); // 2 epochs of 30 batches
  REQUIRE(evals.size() == 2);
  for (const EvalResult &e : evals) {
    CHECK(e.rows == 1000);
    CHECK(e.metrics[0].second > 0.5);
    CHECK(e.metrics[0].second < 0.9);
  }
  CHECK(evals[1].loss < steps.front().loss);
  // Training's histograms counted every training row, untouched by the evaluations.
  int64_t counted = 0;
  for (const std::string &name : {pos, neg})
    for (int64_t c : scope.find(name)->toVector<int64_t>())
      counted += c;
  CHECK(counted == 6000);
}
