// The training toolkit's ops beyond their gradient checks: dropout's mask (keep rate, repeats,
// evaluation), the learning-rate schedules against their formulas, weight decay on selected rows
// and clipping by global norm.
#include <cmath>

#include "executor/executor.h"
#include "test/helpers/expect.h"

using namespace oar;

namespace {

proto::Op dropoutOp(float p, int64_t seed, int64_t trainer, bool isTest = false) {
  return makeOp(
      "dropout", {{"X", {"x"}}, {"Step", {"step"}}},
      {{"Out", {"out"}}, {"Mask", {"mask"}}, {"StepOut", {"step"}}},
      {{"dropout_prob", p}, {"seed", seed}, {"trainer_id", trainer}, {"is_test", isTest}});
}

/// Runs dropout on 100,000 ones at `step`; returns the output.
std::vector<float> dropOnes(const proto::Op &op, int64_t step, int64_t *stepAfter = nullptr) {
  Scope scope;
  Tensor x(proto::F32, {200, 500});
  std::fill_n(x.data<float>(), x.numel(), 1.0f);
  scope.get("x") = x;
  scope.get("step") = Tensor::fromVector<int64_t>({1}, {step});
  Executor exec;
  REQUIRE_OK(exec.runOp(op, scope, "dropout"));
  if (stepAfter)
    *stepAfter = scope.find("step")->data<int64_t>()[0];
  return scope.find("out")->toVector<float>();
}

} // namespace

TEST_CASE("dropout keeps 1-p of the elements, scaled, and repeats with its seed",
          "[ops][dropout]") {
  const float p = 0.3f;
  int64_t stepAfter = 0;
  std::vector<float> out = dropOnes(dropoutOp(p, 7, 0), 5, &stepAfter);
  CHECK(stepAfter == 6);
  const double n = double(out.size());
  double kept = 0;
  for (float v : out) {
    CHECK((v == 0.0f || v == 1.0f / (1.0f - p)));
    kept += v != 0.0f;
  }
  // Binomial(n, 1-p): within three standard deviations of its mean.
  double sigma = std::sqrt(n * p * (1 - p));
  INFO("kept " << kept << " of " << n << ", expected " << n * (1 - p) << " +- " << 3 * sigma);
  CHECK(std::abs(kept - n * (1 - p)) <= 3 * sigma);

  CHECK(dropOnes(dropoutOp(p, 7, 0), 5) == out); // the same seed, step and trainer
  CHECK(dropOnes(dropoutOp(p, 7, 0), 6) != out); // the next step
  CHECK(dropOnes(dropoutOp(p, 8, 0), 5) != out); // another op
  CHECK(dropOnes(dropoutOp(p, 7, 1), 5) != out); // another trainer
  std::vector<float> eval = dropOnes(dropoutOp(p, 7, 0, /*isTest=*/true), 5, &stepAfter);
  CHECK(std::all_of(eval.begin(), eval.end(), [](float v) { return v == 1.0f; }));
  CHECK(stepAfter == 5); // evaluation does not advance the training steps
}

TEST_CASE("a dropout_prob of 1 or more is refused naming it", "[ops][dropout]") {
  Scope scope;
  scope.get("x") = Tensor::fromVector<float>({1, 2}, {1, 2});
  scope.get("step") = Tensor::fromVector<int64_t>({1}, {0});
  Executor exec;
  CHECK_THAT(errorText(exec.runOp(dropoutOp(1.0f, 1, 0), scope, "dropout")),
             Catch::Matchers::Contains("dropout_prob is 1"));
}

namespace {

/// The schedule's formula (the fixtures' README) in double: the factor of the base rate for the
/// update after t updates.
double expectedFactor(const std::string &type, int64_t warmup, int64_t n, double rate, int64_t t) {
  if (t < warmup)
    return double(t + 1) / double(warmup);
  double u = double(t - warmup);
  if (type == "step")
    return std::pow(rate, std::floor(u / double(n)));
  if (type == "exponential")
    return std::pow(rate, u / double(n));
  if (type == "cosine")
    return 0.5 * (1 + std::cos(M_PI * std::min(u, double(n)) / double(n)));
  return 1;
}

} // namespace

TEST_CASE("each learning-rate schedule gives its formula's rate at every update", "[ops][lr]") {
  struct Case {
    const char *type;
    int64_t warmup, decaySteps;
    float rate;
  };
  for (Case c : {Case{"constant", 3, 1, 1.0f}, Case{"step", 0, 4, 0.5f},
                 Case{"exponential", 2, 5, 0.8f}, Case{"cosine", 4, 10, 1.0f}}) {
    INFO("lr_schedule " << c.type << " warmup " << c.warmup);
    // sgd on a zero param with a gradient of ones: each update moves it by minus the rate.
    proto::Op op = makeOp(
        "sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}, {"Step", {"step"}}},
        {{"ParamOut", {"p"}}, {"StepOut", {"step"}}},
        {{"lr_schedule", c.type},
         {"warmup_steps", c.warmup},
         {"lr_decay_steps", c.decaySteps},
         {"lr_decay_rate", c.rate}});
    Scope scope;
    scope.get("lr") = Tensor::fromVector<float>({1}, {0.25f});
    scope.get("g") = Tensor::fromVector<float>({1}, {1});
    scope.get("step") = Tensor::fromVector<float>({1}, {0});
    Executor exec;
    for (int64_t t = 0; t < 20; ++t) {
      scope.get("p") = Tensor::fromVector<float>({1}, {0});
      REQUIRE_OK(exec.runOp(op, scope, "sgd"));
      double want = 0.25 * expectedFactor(c.type, c.warmup, c.decaySteps, c.rate, t);
      INFO("update " << t);
      CHECK(-scope.find("p")->data<float>()[0] == Approx(want).epsilon(1e-6));
      CHECK(scope.find("step")->data<float>()[0] == float(t + 1));
    }
  }
}

TEST_CASE("a schedule without its Step counter is refused naming both", "[ops][lr]") {
  proto::Op op = makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                        {{"ParamOut", {"p"}}}, {{"lr_schedule", "cosine"}});
  Scope scope;
  scope.get("p") = Tensor::fromVector<float>({1}, {0});
  scope.get("g") = Tensor::fromVector<float>({1}, {1});
  scope.get("lr") = Tensor::fromVector<float>({1}, {1});
  Executor exec;
  CHECK_THAT(errorText(exec.runOp(op, scope, "sgd")),
             Catch::Matchers::Contains("needs the Step input"));
}

TEST_CASE("weight decay on a selected-rows gradient reaches only its rows", "[ops][lr]") {
  proto::Op op = makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                        {{"ParamOut", {"p"}}}, {{"weight_decay", 0.5f}});
  Scope scope;
  scope.get("p") = Tensor::fromVector<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  scope.get("lr") = Tensor::fromVector<float>({1}, {0.1f});
  SelectedRows &g = scope.getRows("g");
  g.height = 4;
  g.rows = {1, 3};
  g.values = Tensor::fromVector<float>({2, 2}, {1, 1, 1, 1});
  Executor exec;
  REQUIRE_OK(exec.runOp(op, scope, "sgd"));
  std::vector<float> p = scope.find("p")->toVector<float>();
  auto decayed = [](float v) { return v - 0.1f * (1.0f + 0.5f * v); };
  CHECK(p == std::vector<float>{1, 2, decayed(3), decayed(4), 5, 6, decayed(7), decayed(8)});
}

TEST_CASE("clip_by_global_norm scales every gradient by the norm of all together", "[ops][clip]") {
  proto::Op op = makeOp("clip_by_global_norm", {{"X", {"a", "b"}}}, {{"Out", {"a", "b"}}},
                        {{"max_norm", 1.0f}});
  Scope scope;
  scope.get("a") = Tensor::fromVector<float>({2}, {3, 0});
  scope.get("b") = Tensor::fromVector<float>({1, 1}, {4});
  Executor exec;
  REQUIRE_OK(exec.runOp(op, scope, "clip"));
  float f = float(1.0 / (5.0 + 1e-6)); // the norm is 5
  CHECK(scope.find("a")->toVector<float>() == std::vector<float>{3 * f, 0});
  CHECK(scope.find("b")->toVector<float>() == std::vector<float>{4 * f});
  // Under the limit, nothing changes.
  scope.get("a") = Tensor::fromVector<float>({2}, {0.3f, 0});
  scope.get("b") = Tensor::fromVector<float>({1, 1}, {0.4f});
  REQUIRE_OK(exec.runOp(op, scope, "clip"));
  CHECK(scope.find("a")->toVector<float>() == std::vector<float>{0.3f, 0});
}
