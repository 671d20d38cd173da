// Updates with selected-rows gradients against the NumPy reference in
// test/fixtures/sparse_optimizers/ (made by make_reference.py there), and their errors.
#include <cstring>

#include "executor/executor.h"
#include "executor/npy.h"
#include "executor/selected_rows.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {
Tensor reference(const std::string &name) {
  return requireValue(readNpy(sourceDir() + "/test/fixtures/sparse_optimizers/" + name + ".npy"));
}

constexpr int kSteps = 3;
constexpr float kLr = 0.1f, kEps = 1e-6f, kBeta1 = 0.9f, kBeta2 = 0.999f, kAdamEps = 1e-8f;

/// Step k's gradient: selected rows of the reference parameter, ids repeating.
SelectedRows stepGrad(int k) {
  SelectedRows g;
  g.height = reference("param").dim(0);
  g.rows = reference("step" + std::to_string(k) + "_rows").toVector<int64_t>();
  g.values = reference("step" + std::to_string(k) + "_values");
  return g;
}

/// A scope with the reference parameter as `p`, the learning rate, and `state` filled with
/// `value`, each of `dims`.
Scope startScope(const std::vector<std::tuple<std::string, std::vector<int64_t>, float>> &state) {
  Scope scope;
  scope.get("p") = reference("param");
  scope.get("lr") = Tensor::fromVector<float>({1}, {kLr});
  for (const auto &[name, dims, value] : state) {
    Tensor t(proto::F32, dims);
    std::fill_n(t.data<float>(), t.numel(), value);
    scope.get(name) = t;
  }
  return scope;
}

/// Runs `op` once per reference step with its Grad `g` set to that step's selected rows.
void runSteps(const proto::Op &op, Scope &scope) {
  Executor exec;
  for (int k = 0; k < kSteps; ++k) {
    scope.getRows("g") = stepGrad(k);
    REQUIRE_OK(exec.runOp(op, scope, op.type()));
  }
}

/// Within 1e-6 relative of the NumPy value (both compute in float32 in the same order).
void checkReference(const Scope &scope, const std::string &var, const std::string &refName) {
  Tensor want = reference(refName);
  const Tensor &got = *scope.find(var);
  INFO(var << " against " << refName << ".npy");
  REQUIRE(got.dims() == want.dims());
  CHECK(toleranceRatio(got, want, 1e-6, 1e-7) <= 1.0);
}

/// Row 4 is in no step's gradient: it keeps its initial bits.
void checkUntouchedRow(const Scope &scope) {
  Tensor init = reference("param");
  const int64_t w = init.dim(1);
  CHECK(std::memcmp(scope.find("p")->data<float>() + 4 * w, init.data<float>() + 4 * w,
                    w * sizeof(float)) == 0);
}

proto::Op adagradOp(bool rowWise) {
  return makeOp("adagrad",
                {{"Param", {"p"}}, {"Grad", {"g"}}, {"Moment", {"m"}}, {"LearningRate", {"lr"}}},
                {{"ParamOut", {"p"}}, {"MomentOut", {"m"}}},
                {{"epsilon", kEps}, {"row_wise", rowWise}}, proto::OPTIMIZE);
}

proto::Op adamOp() {
  return makeOp("adam",
                {{"Param", {"p"}},
                 {"Grad", {"g"}},
                 {"LearningRate", {"lr"}},
                 {"Moment1", {"m1"}},
                 {"Moment2", {"m2"}},
                 {"Beta1Pow", {"b1"}},
                 {"Beta2Pow", {"b2"}}},
                {{"ParamOut", {"p"}},
                 {"Moment1Out", {"m1"}},
                 {"Moment2Out", {"m2"}},
                 {"Beta1PowOut", {"b1"}},
                 {"Beta2PowOut", {"b2"}}},
                {{"beta1", kBeta1}, {"beta2", kBeta2}, {"epsilon", kAdamEps}}, proto::OPTIMIZE);
}

const std::vector<int64_t> kParamDims = {7, 3}, kRowDims = {7};
} // namespace

TEST_CASE("sgd with selected rows sums repeated ids and matches the NumPy reference",
          "[ops][sparse]") {
  Scope scope = startScope({});
  runSteps(makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                  {{"ParamOut", {"p"}}}, {}, proto::OPTIMIZE),
           scope);
  checkReference(scope, "p", "sgd_param");
  checkUntouchedRow(scope);
}

TEST_CASE("element-wise adagrad with selected rows matches the NumPy reference", "[ops][sparse]") {
  Scope scope = startScope({{"m", kParamDims, 0.0f}});
  runSteps(adagradOp(false), scope);
  checkReference(scope, "p", "adagrad_param");
  checkReference(scope, "m", "adagrad_moment");
  checkUntouchedRow(scope);
}

TEST_CASE("row-wise adagrad keeps one accumulator per row and matches the NumPy reference",
          "[ops][sparse]") {
  Scope scope = startScope({{"m", kRowDims, 0.0f}});
  runSteps(adagradOp(true), scope);
  checkReference(scope, "p", "rowwise_adagrad_param");
  checkReference(scope, "m", "rowwise_adagrad_moment");
  checkUntouchedRow(scope);
}

TEST_CASE("lazy adam changes only touched rows, each with its own bias correction, as NumPy does",
          "[ops][sparse]") {
  Scope scope = startScope({{"m1", kParamDims, 0.0f},
                            {"m2", kParamDims, 0.0f},
                            {"b1", kRowDims, kBeta1},
                            {"b2", kRowDims, kBeta2}});
  runSteps(adamOp(), scope);
  checkReference(scope, "p", "adam_param");
  checkReference(scope, "m1", "adam_moment1");
  checkReference(scope, "m2", "adam_moment2");
  checkReference(scope, "b1", "adam_beta1_pow");
  checkReference(scope, "b2", "adam_beta2_pow");
  checkUntouchedRow(scope);
}

TEST_CASE("lazy adam on a row touched every step gives dense adam's bits", "[ops][sparse]") {
  // Every row once per step: per-row beta powers advance like the dense [1] ones.
  Tensor grad = reference("step0_values"); // 5 rows of width 3
  SelectedRows all;
  all.height = 5;
  all.rows = {0, 1, 2, 3, 4};
  all.values = grad;
  Scope dense, lazy;
  for (Scope *s : {&dense, &lazy}) {
    s->get("p") = Tensor::fromVector<float>({5, 3}, std::vector<float>(15, 0.5f));
    s->get("lr") = Tensor::fromVector<float>({1}, {kLr});
    s->get("m1") = Tensor(proto::F32, {5, 3});
    s->get("m2") = Tensor(proto::F32, {5, 3});
  }
  dense.get("g") = grad.clone();
  dense.get("b1") = Tensor::fromVector<float>({1}, {kBeta1});
  dense.get("b2") = Tensor::fromVector<float>({1}, {kBeta2});
  lazy.getRows("g") = all;
  lazy.get("b1") = Tensor::fromVector<float>({5}, std::vector<float>(5, kBeta1));
  lazy.get("b2") = Tensor::fromVector<float>({5}, std::vector<float>(5, kBeta2));
  Executor exec;
  for (int step = 0; step < kSteps; ++step) {
    REQUIRE_OK(exec.runOp(adamOp(), dense, "dense adam"));
    REQUIRE_OK(exec.runOp(adamOp(), lazy, "lazy adam"));
  }
  for (const char *v : {"p", "m1", "m2"}) {
    INFO(v);
    CHECK(std::memcmp(dense.find(v)->raw(), lazy.find(v)->raw(), 15 * sizeof(float)) == 0);
  }
  CHECK(lazy.find("b1")->data<float>()[4] == dense.find("b1")->data<float>()[0]);
}

TEST_CASE("a selected-rows id outside the parameter is an error naming the op and the var",
          "[ops][sparse][errors]") {
  Scope scope = startScope({});
  SelectedRows &g = scope.getRows("g");
  g.height = 7;
  g.rows = {2, 7};
  g.values = Tensor(proto::F32, {2, 3});
  Executor exec;
  CHECK(errorText(
            exec.runOp(makeOp("sgd", {{"Param", {"p"}}, {"Grad", {"g"}}, {"LearningRate", {"lr"}}},
                              {{"ParamOut", {"p"}}}),
                       scope, "op #3 (sgd)")) ==
        "op #3 (sgd): Grad (g): row id 7 at position 1 is outside the height 7; ids must lie in "
        "[0, 7)");
  // A lookup whose id is past the table names the ids and the table.
  scope.get("ids") = Tensor::fromVector<int64_t>({2}, {1, 9});
  scope.get("dout") = Tensor(proto::F32, {2, 3});
  CHECK(errorText(exec.runOp(makeOp("lookup_table_grad",
                                    {{"W", {"p"}}, {"Ids", {"ids"}}, {"Out@GRAD", {"dout"}}},
                                    {{"W@GRAD", {"dw"}}}, {{"is_sparse", true}}),
                             scope, "op #5 (lookup_table_grad)")) ==
        "op #5 (lookup_table_grad): Ids (ids): id 9 at position 1 is outside the table p's 7 rows");
}

TEST_CASE("lazy adam needs one beta power per row, and row-wise adagrad one moment per row",
          "[ops][sparse][errors]") {
  Executor exec;
  Scope adam = startScope({{"m1", kParamDims, 0.0f},
                           {"m2", kParamDims, 0.0f},
                           {"b1", {1}, kBeta1},
                           {"b2", {1}, kBeta2}});
  adam.getRows("g") = stepGrad(0);
  CHECK_THAT(errorText(exec.runOp(adamOp(), adam, "op #7 (adam)")),
             Contains("op #7 (adam): Param (p) is f32[7,3] but Beta1Pow (b1) is f32[1]; lazy Adam "
                      "(Grad is selected rows) needs one value per row of Param: f32[7]"));
  Scope adagrad = startScope({{"m", kParamDims, 0.0f}});
  adagrad.getRows("g") = stepGrad(0);
  CHECK_THAT(errorText(exec.runOp(adagradOp(true), adagrad, "op #2 (adagrad)")),
             Contains("Moment (m) is f32[7,3]; row_wise adagrad needs one value per row"));
}
