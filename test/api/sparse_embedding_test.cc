// Sparse embeddings: is_sparse makes W@GRAD selected rows, and training gives what dense does.
#include <cstring>

#include "api/optimizer.h"
#include "executor/executor.h"
#include "executor/selected_rows.h"
#include "ir/listing.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {
/// How the model reads its table: one lookup, or two lookups of the same table.
enum class Lookups { Dense, Sparse, TwoSparse, SparseAndDense, TwoDense };

const char *kTable = "embedding_0.w_0";

/// ids -> embedding [10, 4] (-> + a second lookup of the same table) -> tanh -> fc -> mse.
ModelBuilder embeddingModel(Lookups lookups, Optimizer &&opt) {
  ModelBuilder m(/*seed=*/3);
  std::string ids = m.data("ids", {1}, proto::I64);
  std::string y = m.data("y", {1});
  bool first = lookups != Lookups::Dense && lookups != Lookups::TwoDense;
  std::string x = m.embedding(ids, 10, 4, first);
  if (lookups == Lookups::TwoSparse || lookups == Lookups::SparseAndDense ||
      lookups == Lookups::TwoDense) {
    std::string ids2 = m.data("ids2", {1}, proto::I64);
    bool second = lookups == Lookups::TwoSparse;
    std::string e2 = requireValue(m.appendOp("lookup_table", {{"W", {kTable}}, {"Ids", {ids2}}},
                                             {"Out"}, {{"is_sparse", second}}))[0];
    x = requireValue(m.appendOp("elementwise_add", {{"X", {x}}, {"Y", {e2}}}, {"Out"}))[0];
  }
  std::string pred = m.fc(m.activation(x, "tanh"), 1);
  std::string loss = m.mean(m.squareErrorCost(pred, y));
  requireValue(opt.minimize(m, loss));
  REQUIRE_OK(verifyProgram(m.main(), "embedding model"));
  REQUIRE_OK(verifyProgram(m.startup(), "embedding startup"));
  return m;
}

// Ids repeat within a batch; rows 4, 5 and 8 are never read.
const std::vector<std::vector<int64_t>> kIds = {{1, 3, 1, 7}, {0, 3, 3, 9}, {7, 1, 2, 1}};
const std::vector<std::vector<int64_t>> kIds2 = {{3, 6, 0, 3}, {1, 1, 2, 9}, {6, 7, 7, 0}};
const std::vector<std::vector<float>> kY = {
    {0.5f, -1.0f, 0.25f, 2.0f}, {1.5f, -0.5f, 0.0f, 1.0f}, {-2.0f, 0.75f, 0.5f, -0.25f}};

/// Runs startup, then one step per batch; returns the scope.
std::unique_ptr<Scope> train(ModelBuilder &m, bool twoIds) {
  auto scope = std::make_unique<Scope>();
  Executor exec;
  REQUIRE_OK(exec.run(m.startup(), *scope));
  for (size_t s = 0; s < kIds.size(); ++s) {
    scope->get("ids") = Tensor::fromVector<int64_t>({4, 1}, kIds[s]);
    if (twoIds)
      scope->get("ids2") = Tensor::fromVector<int64_t>({4, 1}, kIds2[s]);
    scope->get("y") = Tensor::fromVector<float>({4, 1}, kY[s]);
    REQUIRE_OK(exec.run(m.main(), *scope));
  }
  return scope;
}

std::vector<std::string> parameters(ModelBuilder &m) {
  std::vector<std::string> out;
  for (const proto::Var &v : m.main().blocks(0).vars())
    if (v.is_parameter())
      out.push_back(v.name());
  return out;
}

float maxDiff(const Tensor &a, const Tensor &b) {
  float d = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    d = std::max(d, std::abs(a.data<float>()[i] - b.data<float>()[i]));
  return d;
}
} // namespace

TEST_CASE("a sparse embedding trained with SGD ends with exactly the dense one's parameters",
          "[api][sparse]") {
  ModelBuilder dense = embeddingModel(Lookups::Dense, SGD(0.5f));
  ModelBuilder sparse = embeddingModel(Lookups::Sparse, SGD(0.5f));
  auto d = train(dense, false), s = train(sparse, false);
  // The sparse run really went the sparse way.
  REQUIRE(s->findRows(gradName(kTable)));
  CHECK_FALSE(s->find(gradName(kTable)));
  for (const std::string &p : parameters(dense)) {
    INFO("parameter " << p);
    CHECK(sameBits(*d->find(p), *s->find(p)));
  }
  // Rows no batch read kept their initial values; the others moved.
  Executor exec;
  Scope init;
  REQUIRE_OK(exec.run(sparse.startup(), init));
  const Tensor &w0 = *init.find(kTable), &w = *s->find(kTable);
  for (int64_t row : {4, 5, 8})
    CHECK(std::memcmp(w0.data<float>() + row * 4, w.data<float>() + row * 4, 16) == 0);
  CHECK(std::memcmp(w0.data<float>() + 4, w.data<float>() + 4, 16) != 0);
}

TEST_CASE("a sparse W@GRAD is declared, listed and held as selected rows of the ids looked up",
          "[api][sparse]") {
  ModelBuilder m = embeddingModel(Lookups::Sparse, SGD(0.5f));
  const proto::Var *g = findVar(m.main().blocks(0), gradName(kTable));
  REQUIRE(g);
  CHECK(g->kind() == proto::SELECTED_ROWS);
  CHECK(typeString(g->type()) == "f32[10,4]");
  CHECK_THAT(listing(m.main(), /*withVars=*/true),
             Contains("var embedding_0.w_0@GRAD: f32[10,4] selected_rows\n"));
  CHECK_THAT(listing(m.main()), Contains("embedding_0.w_0@GRAD = lookup_table_grad(") &&
                                    Contains("{is_distributed=false, is_sparse=true}"));
  // The dense model's listing has no selected rows at all.
  CHECK_THAT(listing(embeddingModel(Lookups::Dense, SGD(0.5f)).main(), true),
             !Contains("selected_rows"));

  auto scope = train(m, false);
  REQUIRE(scope->findRows(gradName(kTable)));
  const SelectedRows &rows = *scope->findRows(gradName(kTable));
  CHECK(rows.height == 10);
  CHECK(rows.rows == kIds.back()); // the last step's ids, in lookup order, repeats kept
  CHECK(rows.values.dims() == llvm::ArrayRef<int64_t>{4, 4});
}

TEST_CASE("two sparse lookups of one table sum to selected rows: with a dense lookup, to dense",
          "[api][sparse]") {
  ModelBuilder twoSparse = embeddingModel(Lookups::TwoSparse, SGD(0.5f));
  ModelBuilder mixed = embeddingModel(Lookups::SparseAndDense, SGD(0.5f));
  ModelBuilder twoDense = embeddingModel(Lookups::TwoDense, SGD(0.5f));
  auto kindOf = [&](ModelBuilder &m) {
    return findVar(m.main().blocks(0), gradName(kTable))->kind();
  };
  CHECK(kindOf(twoSparse) == proto::SELECTED_ROWS);
  CHECK(kindOf(mixed) == proto::DENSE_TENSOR);
  auto s = train(twoSparse, true), x = train(mixed, true), d = train(twoDense, true);
  // Concatenated: both lookups' 4 ids.
  REQUIRE(s->findRows(gradName(kTable)));
  CHECK(s->findRows(gradName(kTable))->rows.size() == 8);
  REQUIRE(x->find(gradName(kTable)));
  for (const std::string &p : parameters(twoDense)) {
    INFO("parameter " << p); // repeats are added in another order, so not always the same bits
    CHECK(maxDiff(*d->find(p), *s->find(p)) <= 1e-6f);
    CHECK(maxDiff(*d->find(p), *x->find(p)) <= 1e-6f);
  }
}

TEST_CASE("Adam and row-wise Adagrad train a sparse embedding lazily: unread rows never change",
          "[api][sparse]") {
  ModelBuilder adam = embeddingModel(Lookups::Sparse, Adam(0.1f));
  ModelBuilder rowWise = embeddingModel(Lookups::Sparse, Adagrad(0.1f, 1e-6f, /*rowWise=*/true));
  CHECK_THAT(listing(adam.main(), true),
             Contains("var embedding_0.w_0_beta1_pow_acc_0: f32[10] persistable"));
  CHECK_THAT(listing(rowWise.main(), true),
             Contains("var embedding_0.w_0_moment_0: f32[10] persistable"));
  CHECK_THAT(listing(rowWise.main()), Contains("row_wise=true"));
  for (ModelBuilder *m : {&adam, &rowWise}) {
    Executor exec;
    Scope init;
    REQUIRE_OK(exec.run(m->startup(), init));
    auto s = train(*m, false);
    const Tensor &w0 = *init.find(kTable), &w = *s->find(kTable);
    for (int64_t row = 0; row < 10; ++row) {
      bool read = false;
      for (const auto &batch : kIds)
        read |= llvm::is_contained(batch, row);
      INFO("row " << row);
      CHECK((std::memcmp(w0.data<float>() + row * 4, w.data<float>() + row * 4, 16) == 0) == !read);
    }
  }
}

TEST_CASE("selected rows where an op takes only dense tensors are refused, naming op and var",
          "[api][sparse][errors]") {
  // Momentum has no sparse update.
  ModelBuilder m(3);
  std::string ids = m.data("ids", {1}, proto::I64);
  std::string loss = m.mean(m.embedding(ids, 10, 4, /*isSparse=*/true));
  requireValue(Momentum(0.1f, 0.9f).minimize(m, loss));
  CHECK_THAT(errorText(verifyProgram(m.main(), "main")),
             Contains("(momentum): input slot Grad: var embedding_0.w_0@GRAD is selected rows but "
                      "momentum takes only a dense tensor there"));
  // The executor refuses it too, for programs that were not verified.
  Executor exec;
  Scope scope;
  REQUIRE_OK(exec.run(m.startup(), scope));
  scope.get("ids") = Tensor::fromVector<int64_t>({2, 1}, {1, 2});
  CHECK_THAT(errorText(exec.run(m.main(), scope)),
             Contains("(momentum): input Grad (embedding_0.w_0@GRAD) is selected rows but "
                      "momentum takes only a dense tensor there"));
}
