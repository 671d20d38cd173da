// The distributed ops' checks of their list attrs, which the runtime reads by position.
#include <functional>

#include "api/optimizer.h"
#include "api/recipes.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"
#include "transpiler/transpiler.h"

using namespace oar;
using Catch::Matchers::Contains;

static DistributeConfig config(const std::string &mode) {
  DistributeConfig c;
  c.trainers = 2;
  c.mode = llvm::cantFail(parseMode(mode));
  c.pservers = {"127.0.0.1:6170", "127.0.0.1:6171"};
  return c;
}

TEST_CASE("a distributed op whose list attrs disagree is refused before any kernel runs",
          "[ops][errors]") {
  // Runs `edit` on the first op of `type` in `prog` and returns what the verifier says.
  auto refusal = [](proto::Program prog, llvm::StringRef type, auto edit) {
    proto::Op *found = nullptr;
    for (proto::Block &b : *prog.mutable_blocks())
      for (proto::Op &op : *b.mutable_ops())
        if (!found && op.type() == type)
          found = &op;
    REQUIRE(found);
    REQUIRE_OK(verifyProgram(prog, "before.pb"));
    edit(*found);
    return errorText(verifyProgram(prog, "edited.pb"));
  };
  auto attr = [](proto::Op &op, llvm::StringRef name) -> proto::Attr & {
    for (proto::Attr &a : *op.mutable_attrs())
      if (a.name() == name)
        return a;
    FAIL("no attr " << name.str());
    std::abort();
  };
  auto strings = [&](proto::Op &op, llvm::StringRef name) {
    return attr(op, name).mutable_strings()->mutable_v();
  };
  auto ints = [&](proto::Op &op, llvm::StringRef name) {
    return attr(op, name).mutable_ints()->mutable_v();
  };
  RecipeSpec mlp;
  mlp.model = "mlp", mlp.in = 784, mlp.hidden = {128, 64}, mlp.out = 10, mlp.optimizer = "adam";
  mlp.loss = "softmax_with_cross_entropy";
  ModelBuilder m = requireValue(buildRecipe(mlp));
  TranspileResult sync = requireValue(transpile(m.main(), m.startup(), config("sync")));
  CHECK_THAT(refusal(sync.trainer(), "send", [&](proto::Op &op) { strings(op, "epmap")->Clear(); }),
             Contains("edited.pb: block 0, op #") && Contains("(send): attr epmap has 0 entries"));
  CHECK_THAT(refusal(sync.trainer(), "recv", [&](proto::Op &op) { strings(op, "epmap")->Add(); }),
             Contains("(recv): attr epmap has 2 entries for 1 vars in Out"));
  CHECK_THAT(refusal(sync.pserver(0), "listen_and_serv",
                     [&](proto::Op &op) { strings(op, "block_params")->RemoveLast(); }),
             Contains("(listen_and_serv): attr block_params has"));
  CHECK_THAT(refusal(sync.pserver(0), "listen_and_serv",
                     [&](proto::Op &op) { setAttr(op, "fanin", int64_t(0)); }),
             Contains("attr fanin is 0; it must be at least 1"));

  TranspileResult geo = requireValue(transpile(m.main(), m.startup(), config("geo")));
  using Edit = std::function<void(proto::Op &)>;
  std::pair<Edit, const char *> geoEdits[] = {
      {[&](proto::Op &op) { strings(op, "block_names")->RemoveLast(); },
       "(geo_sync): attr block_names has 6 entries for 7 blocks in sections"},
      {[&](proto::Op &op) { ints(op, "sections")->RemoveLast(); }, "(geo_sync): attr sections has"},
      {[&](proto::Op &op) { ints(op, "sections")->Set(0, 99); },
       "attr sections holds 99: each param needs at least 1 block, and the params "
       "together at most the 7 entries of block_rows"},
      {[&](proto::Op &op) { strings(op, "epmap")->RemoveLast(); }, "(geo_sync): attr epmap has"},
      {[&](proto::Op &op) { setAttr(op, "k_steps", int64_t(0)); },
       "attr k_steps is 0; it must be at least 1"},
  };
  for (const auto &[edit, expected] : geoEdits)
    CHECK_THAT(refusal(geo.trainer(), "geo_sync", edit), Contains(expected));

  ModelBuilder t;
  std::string ids = t.data("ids", {1}, proto::I64);
  requireValue(SGD(0.1f).minimize(t, t.mean(t.embedding(ids, 100, 8, true, true))));
  TranspileResult table = requireValue(transpile(t.main(), t.startup(), config("sync")));
  for (const char *type : {"distributed_lookup_table", "distributed_push_sparse"})
    CHECK_THAT(refusal(table.trainer(), type,
                       [&](proto::Op &op) { setAttr(op, "num_shards", int64_t(0)); }),
               Contains("table embedding_0.w_0: attr num_shards is 0; it must be at least 1"));
}
