// append_backward: summing shared grads, stop_gradient and the no-grad set.
#include "api/backward.h"
#include "api/layers.h"
#include "executor/executor.h"
#include "ir/listing.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

TEST_CASE("a var read by two ops gets the sum of both gradients", "[ir][autodiff]") {
  ModelBuilder m;
  std::string x = m.data("x", {3});
  std::string s = m.activation(m.fc(x, 3), "tanh");
  // s is read three times: twice by the product and once by the sum.
  std::string u = requireValue(m.appendOp("elementwise_mul", {{"X", {s}}, {"Y", {s}}}, {"Out"}))[0];
  std::string loss = m.mean(requireValue(m.appendOp("sum", {{"X", {u, s}}}, {"Out"}))[0]);
  auto grads = requireValue(appendBackward(m.main(), loss));
  REQUIRE_OK(verifyProgram(m.main(), "shared"));
  std::string text = listing(m.main());
  CHECK_THAT(text,
             Contains(gradName(s) + " = sum(X: " + renamedGrad(gradName(s), 0) + ", " +
                      renamedGrad(gradName(s), 1) + ", " + renamedGrad(gradName(s), 2) + ")"));
  CHECK(grads.size() == 2);
  CHECK_THAT(text, !Contains("x@GRAD"));

  // d mean(s*s + s)/ds = (2s + 1)/n, checked on one batch.
  Executor exec;
  Scope scope;
  REQUIRE_OK(exec.run(m.startup(), scope));
  scope.get("x") = Tensor::fromVector<float>({2, 3}, {0.1f, -0.2f, 0.3f, 0.5f, 0.4f, -0.6f});
  REQUIRE_OK(exec.run(m.main(), scope));
  const Tensor &sv = *scope.find(s), &sg = *scope.find(gradName(s));
  for (int64_t i = 0; i < sv.numel(); ++i)
    CHECK(sg.data<float>()[i] == Approx((2 * sv.data<float>()[i] + 1) / sv.numel()).epsilon(1e-5));
}

TEST_CASE("stop_gradient vars and the no-grad set get no gradient", "[ir][autodiff]") {
  ModelBuilder m;
  std::string x = m.data("x", {3});
  std::string h = m.fc(x, 2);
  std::string loss = m.mean(m.fc(h, 1));
  auto grads = requireValue(appendBackward(m.main(), loss, {"fc_1.b_0"}));
  std::vector<std::string> params;
  for (auto &pg : grads)
    params.push_back(pg.param);
  CHECK(params == std::vector<std::string>{"fc_0.b_0", "fc_0.w_0", "fc_1.w_0"});
  CHECK(!findVar(m.main().blocks(0), "x@GRAD"));
}

TEST_CASE("append_backward refuses a loss that is not a scalar", "[ir][autodiff]") {
  ModelBuilder m;
  std::string h = m.fc(m.data("x", {3}), 2);
  CHECK_THAT(errorText(appendBackward(m.main(), h)), Contains("must hold one element"));
}
