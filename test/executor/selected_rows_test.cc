// SelectedRows in the Scope, their merging, sums, and lookup_table's sparse gradient.
#include "executor/executor.h"
#include "executor/selected_rows.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

static SelectedRows rowsOf(int64_t height, std::vector<int64_t> ids, std::vector<float> values) {
  SelectedRows sr;
  sr.height = height;
  int64_t n = static_cast<int64_t>(ids.size());
  sr.values = Tensor::fromVector<float>({n, static_cast<int64_t>(values.size()) / n}, values);
  sr.rows = std::move(ids);
  return sr;
}

TEST_CASE("lookup_table's sparse gradient is the ids looked up, in order, and scatters to the "
          "dense gradient",
          "[executor][sparse]") {
  Scope scope;
  scope.get("w") = Tensor(proto::F32, {5, 2});
  scope.get("ids") = Tensor::fromVector<int64_t>({6, 1}, {4, 1, 0, 4, 2, 4});
  std::vector<float> dout{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  scope.get("dout") = Tensor::fromVector<float>({6, 2}, dout);
  Executor exec;
  for (bool sparse : {false, true})
    REQUIRE_OK(exec.runOp(makeOp("lookup_table_grad",
                                 {{"W", {"w"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"dout"}}},
                                 {{"W@GRAD", {sparse ? "dw_sparse" : "dw_dense"}}},
                                 {{"is_sparse", sparse}, {"padding_idx", int64_t(1)}}),
                          scope, "lookup_table_grad"));
  REQUIRE_FALSE(scope.find("dw_sparse"));
  REQUIRE(scope.findRows("dw_sparse"));
  const SelectedRows &dw = *scope.findRows("dw_sparse");
  CHECK(dw.height == 5);
  CHECK(dw.rows == std::vector<int64_t>{4, 0, 4, 2, 4}); // padding id 1 left out, repeats kept
  CHECK(dw.values.toVector<float>() == std::vector<float>{1, 2, 5, 6, 7, 8, 9, 10, 11, 12});
  CHECK(toDense(dw).toVector<float>() == scope.find("dw_dense")->toVector<float>());
}

TEST_CASE("merging selected rows sums repeated ids in order of first appearance",
          "[executor][sparse]") {
  SelectedRows in = rowsOf(6, {5, 1, 5, 0, 1}, {1, 10, 2, 20, 3, 30, 4, 40, 5, 50}), out;
  mergeRows(in, out);
  CHECK(out.height == 6);
  CHECK(out.rows == std::vector<int64_t>{5, 1, 0});
  CHECK(out.values.toVector<float>() == std::vector<float>{4, 40, 7, 70, 4, 40});
  CHECK(toDense(out).toVector<float>() == toDense(in).toVector<float>());
  REQUIRE_OK(checkRows(in, "x"));
  CHECK(errorText(checkRows(rowsOf(6, {2, 6}, {0, 0}), "sgd: Grad (g)")) ==
        "sgd: Grad (g): row id 6 at position 1 is outside the height 6; ids must lie in [0, 6)");
}

TEST_CASE("sum concatenates selected rows, and adds dense and selected rows into a dense tensor",
          "[executor][sparse]") {
  Scope scope;
  scope.getRows("a") = rowsOf(4, {3, 1}, {1, 2, 3, 4});
  scope.getRows("b") = rowsOf(4, {1}, {10, 20});
  scope.get("d") = Tensor::fromVector<float>({4, 2}, {1, 1, 1, 1, 1, 1, 1, 1});
  Executor exec;
  REQUIRE_OK(exec.runOp(makeOp("sum", {{"X", {"a", "b"}}}, {{"Out", {"s"}}}), scope, "sum"));
  REQUIRE(scope.findRows("s"));
  const SelectedRows &s = *scope.findRows("s");
  CHECK(s.height == 4);
  CHECK(s.rows == std::vector<int64_t>{3, 1, 1});
  CHECK(s.values.toVector<float>() == std::vector<float>{1, 2, 3, 4, 10, 20});

  REQUIRE_OK(exec.runOp(makeOp("sum", {{"X", {"a", "d", "b"}}}, {{"Out", {"m"}}}), scope, "sum"));
  REQUIRE_FALSE(scope.findRows("m"));
  CHECK(scope.find("m")->dims() == llvm::ArrayRef<int64_t>{4, 2});
  CHECK(scope.find("m")->toVector<float>() == std::vector<float>{1, 1, 14, 25, 1, 1, 2, 3});
}

TEST_CASE("a scope name holds a dense tensor or selected rows, and making one drops the other",
          "[executor][sparse]") {
  Scope scope;
  scope.get("g") = Tensor(proto::F32, {2});
  scope.getRows("g").height = 3;
  CHECK_FALSE(scope.find("g"));
  CHECK(scope.findRows("g")->height == 3);
  scope.get("g");
  CHECK_FALSE(scope.findRows("g"));
  scope.getRows("g");
  scope.erase("g");
  CHECK_FALSE(scope.findRows("g"));
  CHECK_FALSE(scope.find("g"));
}
