// The dense sum kernel writes straight into Out unless Out shares memory with an input it
// still reads; either way the additions happen in input order.
#include "executor/executor.h"
#include "ir/program.h"
#include "test/helpers/expect.h"

using namespace oar;

namespace {

/// Runs sum(X = inputs) -> out in `scope`.
void runSum(Scope &scope, std::vector<std::string> inputs, const std::string &out) {
  Executor exec;
  REQUIRE_OK(exec.runOp(makeOp("sum", {{"X", std::move(inputs)}}, {{"Out", {out}}}), scope, "sum"));
}

} // namespace

TEST_CASE("sum adds its inputs in order, into a fresh Out or in place over any input",
          "[executor]") {
  // Values where the order of additions shows in the last bit: (a + b) + c != a + (b + c).
  const std::vector<float> a{1e8f, 1.0f, 0.1f}, b{-1e8f, 1e-8f, 0.2f}, c{1.0f, 1.0f, 0.3f};
  std::vector<float> inOrder(3);
  for (size_t i = 0; i < 3; ++i) {
    float acc = a[i];
    acc += b[i];
    acc += c[i];
    inOrder[i] = acc;
  }
  REQUIRE(inOrder != std::vector<float>{a[0] + (b[0] + c[0]), a[1] + (b[1] + c[1]),
                                        a[2] + (b[2] + c[2])});
  auto fill = [&](Scope &scope) {
    scope.get("a") = Tensor::fromVector<float>({3}, a);
    scope.get("b") = Tensor::fromVector<float>({3}, b);
    scope.get("c") = Tensor::fromVector<float>({3}, c);
  };
  for (const std::string out : {"s", "a", "b", "c"}) { // fresh, then over each input
    INFO("Out = " << out);
    Scope scope;
    fill(scope);
    runSum(scope, {"a", "b", "c"}, out);
    CHECK(scope.find(out)->toVector<float>() == inOrder);
  }
  Scope scope;
  fill(scope);
  runSum(scope, {"b", "b"}, "b"); // the same input twice, written over
  CHECK(scope.find("b")->toVector<float>() == std::vector<float>{-2e8f, 2e-8f, 0.4f});
  runSum(scope, {"a"}, "one");
  CHECK(scope.find("one")->toVector<float>() == a);
}
