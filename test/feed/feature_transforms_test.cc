// The log1p, bucketize and feature_key ops give what a schema feed gives for the same cells, so a
// program fed raw columns and one trained on a feed agree.
#include <cmath>
#include <fstream>

#include "api/recipes.h"
#include "executor/executor.h"
#include "feed/batch_source.h"
#include "feed/schema.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// The tensor of feed var `name` in `batch` (columns name the vars in batch order).
const Tensor &feedVar(const proto::DataFeed &feed, const std::vector<Tensor> &batch,
                      llvm::StringRef name) {
  for (int i = 0; i < feed.columns_size(); ++i)
    if (feed.columns(i) == name)
      return batch[i];
  FAIL("the feed has no var " << name.str());
  return batch[0];
}

Tensor runUnary(const std::string &op, Tensor x, AttrList attrs) {
  Scope scope;
  scope.get("x") = std::move(x);
  REQUIRE_OK(Executor().runOp(makeOp(op, {{"X", {"x"}}}, {{"Out", {"y"}}}, attrs), scope, op));
  return scope.get("y").clone();
}

} // namespace

TEST_CASE("log1p, bucketize and feature_key give the csv feed's dense values and keys",
          "[ops][feed]") {
  // 0.1 and 0.3 are no f32: a boundary of 0.1 and an amount of 0.1 meet where rounding decides.
  std::vector<double> prices{0, 20.5, -3, 1e6, 0.25}, amounts{0.1, 1, 9.99, 0.3, 250};
  std::vector<int64_t> hours{0, 7, 23, 12, 7};
  std::string path = scratchDir("feature_transforms") + "/clicks.csv";
  {
    std::ofstream out(path);
    out << "hour,amount,clicked,price\n";
    for (size_t i = 0; i < prices.size(); ++i)
      out << hours[i] << ',' << amounts[i] << ',' << (i % 2) << ',' << prices[i] << '\n';
  }
  RecipeSpec s;
  s.model = "wide_deep";
  s.format = "csv";
  s.schema = requireValue(
      schemaFromFlags("clicked", "price:log1p,amount:bucketize:0.1:0.3:1:10:100", "hour:int"));
  s.data = {path};
  applyCtrDefaults(s, {"shuffle"}); // rows in file order
  s.batchSize = 5;
  s.hidden = {4};
  s.vocab = 1 << 10;
  ModelBuilder m = requireValue(buildRecipe(s));
  const proto::DataFeed &feed = m.main().train_feed();
  auto source = requireValue(openBatchSource(feed, m.main().blocks(0)));
  std::vector<Tensor> batch;
  int64_t epoch;
  REQUIRE(requireValue(source->next(batch, epoch)));

  const Tensor &dense = feedVar(feed, batch, "dense"), &keys = feedVar(feed, batch, "sparse");
  REQUIRE(dense.dims().vec() == std::vector<int64_t>{5, 1});
  REQUIRE(keys.dims().vec() == std::vector<int64_t>{5, 2}); // hour, then the bucketized amount
  Tensor logged = runUnary("log1p", Tensor::fromVector<double>({5}, prices), {});
  Tensor hourKeys = runUnary("feature_key", Tensor::fromVector<int64_t>({5}, hours),
                             {{"column", std::string("hour")}});
  Tensor buckets = runUnary("bucketize", Tensor::fromVector<double>({5}, amounts),
                            {{"boundaries", std::vector<float>{0.1f, 0.3f, 1, 10, 100}}});
  Tensor amountKeys = runUnary("feature_key", buckets.clone(), {{"column", std::string("amount")}});
  CHECK(std::vector<int64_t>(buckets.data<int64_t>(), buckets.data<int64_t>() + 5) ==
        std::vector<int64_t>{0, 3, 3, 1, 5}); // 0.1 < 0.1f and 0.3 < 0.3f
  for (int64_t r = 0; r < 5; ++r) {
    INFO("row " << r);
    CHECK(static_cast<float>(logged.data<double>()[r]) == dense.data<float>()[r]);
    CHECK(hourKeys.data<int64_t>()[r] == keys.data<int64_t>()[2 * r]);
    CHECK(amountKeys.data<int64_t>()[r] == keys.data<int64_t>()[2 * r + 1]);
  }
  CHECK(std::abs(logged.data<double>()[2] + std::log1p(3.0)) < 1e-15); // the sign is kept
}

TEST_CASE("bucketize and feature_key refuse what has no bucket or key", "[ops][feed]") {
  Executor exec;
  Scope scope;
  scope.get("x") = Tensor::fromVector<float>({3}, {1, NAN, 2});
  proto::Op bucketize = makeOp("bucketize", {{"X", {"x"}}}, {{"Out", {"y"}}},
                               {{"boundaries", std::vector<float>{0, 1}}});
  CHECK_THAT(errorText(exec.runOp(bucketize, scope, "t")), Contains("position 1 is NaN"));
  proto::Op descending = makeOp("bucketize", {{"X", {"x"}}}, {{"Out", {"y"}}},
                                {{"boundaries", std::vector<float>{2, 1}}});
  CHECK_THAT(errorText(exec.runOp(descending, scope, "t")),
             Contains("boundaries 2 and 1 (at 0 and 1) are not ascending"));
  proto::Op floatKeys = makeOp("feature_key", {{"X", {"x"}}}, {{"Out", {"y"}}},
                               {{"column", std::string("price")}});
  CHECK_THAT(errorText(exec.runOp(floatKeys, scope, "t")), Contains("feature_key hashes i64 ids"));
  scope.get("x") = Tensor::fromVector<int64_t>({1}, {3});
  proto::Op unnamed = makeOp("feature_key", {{"X", {"x"}}}, {{"Out", {"y"}}}, {});
  CHECK_THAT(errorText(exec.runOp(unnamed, scope, "t")), Contains("column is empty"));
}
