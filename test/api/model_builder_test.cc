// Misusing the model API gives errors naming the layer and the var, never a crash or an exit.
#include "api/optimizer.h"
#include "executor/executor.h"
#include "feed/feed_overrides.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("a typo in a var name is an error naming the var, and nothing more is built", "[api]") {
  ModelBuilder m;
  std::string x = m.data("x", {13});
  std::string h = m.fc("xx", 8, "relu"); // the typo
  CHECK(h.empty());
  std::string pred = m.fc(h, 1);
  CHECK(pred.empty());
  int opsAfterFailure = m.main().blocks(0).ops_size();
  std::string loss = m.mean(m.squareErrorCost(pred, m.data("y", {1})));
  CHECK(m.main().blocks(0).ops_size() == opsAfterFailure);
  std::string err = errorText(m.status());
  CHECK_THAT(err, Contains("fc_0") && Contains("\"xx\" is not declared"));
  // minimize and save hand back the same first error; save writes nothing.
  CHECK(errorText(SGD(0.1f).minimize(m, loss)) == err);
  std::string dir = scratchDir("builder_typo");
  CHECK(errorText(m.save(dir)) == err);
  CHECK_FALSE(llvm::sys::fs::exists(dir + "/main.pb"));
}

TEST_CASE("an unknown activation, pooling type or size is an error naming it", "[api]") {
  {
    ModelBuilder m;
    m.fc(m.data("x", {4}), 8, "gelu");
    CHECK_THAT(errorText(m.status()), Contains("fc_0: unknown activation \"gelu\""));
  }
  {
    ModelBuilder m;
    m.pool2d(m.data("img", {1, 28, 28}), 2, "median");
    CHECK_THAT(errorText(m.status()), Contains("unknown pooling type \"median\""));
  }
  {
    ModelBuilder m;
    m.fc(m.data("x", {4}), 0);
    CHECK_THAT(errorText(m.status()), Contains("size must be positive"));
  }
  {
    ModelBuilder m;
    m.conv2d(m.data("x", {4}), 6, 5); // not NCHW
    CHECK_THAT(errorText(m.status()), Contains("conv2d_0: needs an NCHW input"));
  }
}

TEST_CASE("a name declared twice is an error naming it", "[api]") {
  ModelBuilder m;
  m.data("x", {4});
  m.data("x", {4});
  CHECK_THAT(errorText(m.status()), Contains("var \"x\" is declared already"));
  ModelBuilder p;
  p.createParameter("w", {2, 2}, Initializer::constant(1));
  p.createParameter("w", {2, 2}, Initializer::constant(2));
  CHECK_THAT(errorText(p.status()), Contains("\"w\" is declared already"));
}

TEST_CASE("two optimizers in one model each keep their own learning rate", "[api]") {
  ModelBuilder m;
  std::string x = m.data("x", {2}), y = m.data("y", {1});
  std::string loss0 = m.mean(m.squareErrorCost(m.fc(x, 1), y)); // fc_0
  std::string loss1 = m.mean(m.squareErrorCost(m.fc(x, 1), y)); // fc_1
  REQUIRE_OK(SGD(0.1f).minimize(m, loss0).takeError());
  auto second = requireValue(Momentum(0.5f, 0.9f).minimize(m, loss1));
  // Its own params only (fc_1.w_0, fc_1.b_0): fc_0 stays with the first.
  CHECK(second.size() == 2);
  std::map<std::string, std::string> lrOf; // param -> learning-rate var of its update op
  for (const proto::Op &op : m.main().blocks(0).ops())
    if (op.role() == proto::OPTIMIZE)
      lrOf[opInputs(op, "Param")[0]] = opInputs(op, "LearningRate")[0];
  CHECK(lrOf.size() == 4);
  CHECK(lrOf["fc_0.w_0"] == "learning_rate_0");
  CHECK(lrOf["fc_1.w_0"] == "learning_rate_1");
  CHECK(m.main().loss() == loss0);
  Executor exec;
  Scope scope;
  REQUIRE_OK(exec.run(m.startup(), scope));
  CHECK(scope.find("learning_rate_0")->data<float>()[0] == 0.1f);
  CHECK(scope.find("learning_rate_1")->data<float>()[0] == 0.5f);
}

TEST_CASE("a data feed is checked when it is described", "[api]") {
  ModelBuilder m;
  std::string x = m.data("x", {2}), y = m.data("y", {1});
  m.setTrainFeed({.format = "parquet", .files = {"a"}, .columns = {x, y}});
  CHECK_THAT(errorText(m.status()), Contains("setTrainFeed: unknown data format \"parquet\""));
  ModelBuilder n;
  std::string a = n.data("a", {2});
  n.setTrainFeed({.format = "csv", .files = {"rows.csv"}, .columns = {a, "label"}});
  CHECK_THAT(errorText(n.status()), Contains("column \"label\" is not a declared var"));
}

TEST_CASE("feed overrides replace files, epochs and batch size, and add a test feed", "[api]") {
  ModelBuilder m;
  std::string x = m.data("x", {13}), y = m.data("y", {1});
  m.setTrainFeed({.format = "uci_housing",
                  .files = {"old.data"},
                  .columns = {x, y},
                  .batchSize = 20,
                  .epochs = 30,
                  .split = "train"});
  m.setTestFeed({.format = "uci_housing",
                 .files = {"old.data"},
                 .columns = {x, y},
                 .batchSize = 20,
                 .split = "test"});
  REQUIRE_OK(m.status());
  proto::Program p = m.main();
  FeedOverrides o;
  o.data = {"new.data"};
  o.epochs = 2;
  o.batchSize = 8;
  REQUIRE_OK(applyFeedOverrides(p, o, "main.pb"));
  CHECK(p.train_feed().files(0) == "new.data");
  CHECK(p.test_feed().files(0) == "new.data"); // uci_housing: the test rows follow the file
  CHECK(p.train_feed().epochs() == 2);
  CHECK(p.train_feed().batch_size() == 8);
  CHECK(p.test_feed().split() == "test");

  ModelBuilder n;
  std::string a = n.data("a", {2});
  n.setTrainFeed({.format = "csv", .files = {"train.csv"}, .columns = {a}, .shuffle = true});
  proto::Program q = n.main();
  FeedOverrides t;
  t.testData = {"test.csv"};
  REQUIRE_OK(applyFeedOverrides(q, t, "main.pb"));
  CHECK(q.test_feed().files(0) == "test.csv");
  CHECK(q.test_feed().format() == "csv");
  CHECK_FALSE(q.test_feed().shuffle());

  proto::Program none = ModelBuilder().main();
  CHECK_THAT(errorText(applyFeedOverrides(none, o, "main.pb")),
             Contains("main.pb has no train feed to give --data"));
}
