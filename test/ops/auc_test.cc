// auc: the bucketed streaming AUC against a sorted-score AUC, and accumulation over batches.
#include <random>

#include "executor/executor.h"
#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// `n` scores uniform in [0, 1) and labels drawn as Bernoulli(score), so the AUC is about 0.83.
struct Scored {
  std::vector<double> scores;
  std::vector<uint8_t> labels;
};
Scored randomScored(int64_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Scored s;
  for (int64_t i = 0; i < n; ++i) {
    s.scores.push_back(static_cast<float>(u(gen))); // as the f32 op sees it
    s.labels.push_back(u(gen) < s.scores.back());
  }
  return s;
}

/// Scope with zeroed StatPos/StatNeg of `buckets` and an auc op that updates them in place.
struct AucRun {
  Scope scope;
  Executor exec;
  proto::Op op = makeOp(
      "auc",
      {{"Predict", {"pred"}}, {"Label", {"label"}}, {"StatPos", {"pos"}}, {"StatNeg", {"neg"}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {"pos"}}, {"StatNegOut", {"neg"}}});
  explicit AucRun(int64_t buckets = 4096) {
    scope.get("pos") = Tensor(proto::I64, {buckets});
    scope.get("neg") = Tensor(proto::I64, {buckets});
  }
  /// Feeds rows [begin, end) as f32 [n, width] (the positive class in the last column) with
  /// i64 labels; returns the AUC the op reports.
  double feed(const Scored &s, size_t begin, size_t end, int64_t width = 1) {
    int64_t n = static_cast<int64_t>(end - begin);
    Tensor pred(proto::F32, {n, width}), label(proto::I64, {n, 1});
    for (int64_t i = 0; i < n; ++i) {
      pred.data<float>()[i * width + width - 1] = static_cast<float>(s.scores[begin + i]);
      label.data<int64_t>()[i] = s.labels[begin + i];
    }
    scope.get("pred") = pred;
    scope.get("label") = label;
    REQUIRE_OK(exec.runOp(op, scope, "auc"));
    return scope.find("auc")->data<float>()[0];
  }
};

} // namespace

TEST_CASE("auc is within 1e-4 of the sorted-score AUC on 100k random scores", "[ops][auc]") {
  Scored s = randomScored(100000, 3);
  double exact = sortedScoreAuc(s.scores, s.labels);
  REQUIRE(exact > 0.8);
  AucRun one;
  CHECK(one.feed(s, 0, s.scores.size()) == Approx(exact).margin(1e-4));
  AucRun twoColumns; // Paddle's layout: [N, 2] with the positive class's probability in column 1
  CHECK(twoColumns.feed(s, 0, s.scores.size(), 2) == Approx(exact).margin(1e-4));
}

TEST_CASE("auc accumulated over several batches equals auc over one big batch", "[ops][auc]") {
  Scored s = randomScored(30000, 5);
  AucRun whole, batched;
  double all = whole.feed(s, 0, s.scores.size());
  double last = 0;
  size_t cuts[] = {0, 1, 1000, 1007, 12000, 29999, 30000};
  for (size_t i = 0; i + 1 < std::size(cuts); ++i)
    last = batched.feed(s, cuts[i], cuts[i + 1]);
  CHECK(last == all);
  CHECK(batched.scope.find("pos")->toVector<int64_t>() ==
        whole.scope.find("pos")->toVector<int64_t>());
  CHECK(batched.scope.find("neg")->toVector<int64_t>() ==
        whole.scope.find("neg")->toVector<int64_t>());
  CHECK(last == Approx(sortedScoreAuc(s.scores, s.labels)).margin(1e-4));
}

TEST_CASE("auc names the state var whose size does not match num_thresholds", "[ops][auc]") {
  AucRun run(100); // the default num_thresholds 4095 needs 4096 buckets
  run.scope.get("pred") = Tensor(proto::F32, {10, 1});
  run.scope.get("label") = Tensor(proto::I64, {10, 1});
  CHECK_THAT(errorText(run.exec.runOp(run.op, run.scope, "auc")),
             Contains("StatPos") && Contains("i64[4096]"));
}
