// The DistributeTranspiler: op sequences, the block partition, startup slices, bad configs.
#include <fstream>
#include <functional>
#include <random>
#include <sstream>

#include "api/optimizer.h"
#include "api/recipes.h"
#include "executor/executor.h"
#include "ir/listing.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "support/hash.h"
#include "test/helpers/expect.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

ModelBuilder fitALine() {
  RecipeSpec s; // linear 13 -> 1, SGD
  return requireValue(buildRecipe(s));
}

ModelBuilder mnistMlp() {
  RecipeSpec s;
  s.model = "mlp", s.in = 784, s.hidden = {128, 64}, s.out = 10;
  s.loss = "softmax_with_cross_entropy", s.optimizer = "adam";
  return requireValue(buildRecipe(s));
}

/// An embedding of 100 x 8 whose table is distributed, trained by SGD.
ModelBuilder tableModel() {
  ModelBuilder m;
  std::string ids = m.data("ids", {1}, proto::I64);
  requireValue(SGD(0.1f).minimize(m, m.mean(m.embedding(ids, 100, 8, true, true))));
  return m;
}

/// Runs `edit` on input slot `slot` of the first op of `type` in main's block 0, as a hand
/// edit of a program file would.
void editInput(ModelBuilder &m, llvm::StringRef type, llvm::StringRef slot,
               const std::function<void(proto::Slot &)> &edit) {
  for (proto::Op &op : *m.main().mutable_blocks(0)->mutable_ops())
    for (proto::Slot &s : *op.mutable_inputs())
      if (op.type() == type && s.slot() == slot)
        return edit(s);
  FAIL("no " << type.str() << " op with input " << slot.str());
}

DistributeConfig config(int pservers, const std::string &mode, int trainers = 2) {
  DistributeConfig c;
  c.trainers = trainers;
  c.mode = llvm::cantFail(parseMode(mode));
  for (int i = 0; i < pservers; ++i)
    c.pservers.push_back("127.0.0.1:" + std::to_string(6170 + i));
  return c;
}

std::vector<std::string> opTypes(const proto::Block &b) {
  std::vector<std::string> t;
  for (const proto::Op &op : b.ops())
    t.push_back(op.type());
  return t;
}

/// Checks the trainer program against the rewrite the issue describes.
void checkTrainerShape(const proto::Program &single, const TranspileResult &r) {
  const DistributePlan &plan = r.plan;
  const proto::Block &t = r.trainer().blocks(0);
  auto types = opTypes(t);
  if (plan.config.mode == Mode::Geo) {
    CHECK(types.back() == "geo_sync");
    CHECK(std::count(types.begin(), types.end(), "send") == 0);
    return;
  }
  for (const proto::Op &op : t.ops())
    CHECK(op.role() != proto::OPTIMIZE);
  size_t firstRecv = std::find(types.begin(), types.end(), "recv") - types.begin();
  for (const ParamPlan &p : plan.params) {
    INFO("param " << p.param);
    // The send of this grad comes right after the last op writing it (and its split).
    int lastWrite = -1, sendAt = -1;
    for (int i = 0; i < t.ops_size(); ++i) {
      auto outs = allOutputNames(t.ops(i));
      if (t.ops(i).type() != "split_byref" && llvm::is_contained(outs, p.grad))
        lastWrite = i;
      auto ins = opInputs(t.ops(i), "X");
      if (t.ops(i).type() == "send" && llvm::is_contained(ins, p.blocks[0].gradName))
        sendAt = i;
    }
    REQUIRE(lastWrite >= 0);
    CHECK(sendAt == lastWrite + (p.split() ? 2 : 1));
    if (p.split())
      CHECK(t.ops(lastWrite + 1).type() == "split_byref");
    CHECK(static_cast<size_t>(sendAt) < firstRecv);
  }
  size_t nRecv = std::count(types.begin(), types.end(), "recv");
  CHECK(nRecv == plan.params.size());
  bool sync = plan.config.mode == Mode::Sync;
  CHECK(std::count(types.begin(), types.end(), "send_barrier") == (sync ? 1 : 0));
  CHECK(std::count(types.begin(), types.end(), "fetch_barrier") == (sync ? 1 : 0));
  if (sync)
    CHECK(types[firstRecv - 1] == "send_barrier");
  size_t splitParams = std::count_if(plan.params.begin(), plan.params.end(),
                                     [](const ParamPlan &p) { return p.split(); });
  CHECK(static_cast<size_t>(std::count(types.begin(), types.end(), "concat")) == splitParams);
  (void)single;
}

void checkPserverShape(const TranspileResult &r) {
  for (size_t i = 0; i < r.numPservers(); ++i) {
    const proto::Program &ps = r.pserver(i);
    INFO("pserver " << i);
    CHECK(opTypes(ps.blocks(0)) == std::vector<std::string>{"listen_and_serv"});
    size_t blocksHere = 0;
    for (const ParamPlan &p : r.plan.params)
      for (const VarBlock &b : p.blocks)
        blocksHere += b.endpointIndex == i;
    CHECK(static_cast<size_t>(ps.blocks_size()) == blocksHere + 1);
    for (int b = 1; b < ps.blocks_size(); ++b) {
      auto types = opTypes(ps.blocks(b));
      if (r.plan.config.mode == Mode::Sync)
        CHECK((types.size() == 3 && types[0] == "sum" && types[1] == "scale"));
      else if (r.plan.config.mode == Mode::Async)
        CHECK(types.size() == 1);
      else
        CHECK(types == std::vector<std::string>{"elementwise_add"});
    }
  }
}

} // namespace

TEST_CASE("golden listings of fit_a_line and the MNIST MLP for 1-3 pservers in every mode",
          "[transpiler]") {
  bool update = getenv("OAR_UPDATE_GOLDEN") != nullptr;
  for (auto [name, model] :
       {std::pair{"fit_a_line", fitALine()}, std::pair{"mnist_mlp", mnistMlp()}})
    for (const char *mode : {"sync", "async", "geo"})
      for (int n = 1; n <= 3; ++n) {
        std::string label = std::string(name) + "_" + mode + "_" + std::to_string(n);
        SECTION(label) {
          TranspileResult r =
              requireValue(transpile(model.main(), model.startup(), config(n, mode)));
          checkTrainerShape(model.main(), r);
          checkPserverShape(r);
          REQUIRE_OK(verifyProgram(r.trainer(), label + " trainer"));
          REQUIRE_OK(verifyProgram(r.trainerStartup(), label + " trainer startup"));
          for (size_t i = 0; i < r.numPservers(); ++i) {
            REQUIRE_OK(verifyProgram(r.pserver(i), label + " pserver"));
            REQUIRE_OK(verifyProgram(r.pserverStartup(i), label + " pserver startup"));
          }
          std::string text = "# trainer\n" + listing(r.trainer()) + "# trainer startup\n" +
                             listing(r.trainerStartup());
          for (size_t i = 0; i < r.numPservers(); ++i)
            text += "# pserver " + std::to_string(i) + "\n" + listing(r.pserver(i)) + "# pserver " +
                    std::to_string(i) + " startup\n" + listing(r.pserverStartup(i));
          text += r.plan.text();
          std::string path = sourceDir() + "/test/transpiler/golden/" + label + ".txt";
          if (update)
            std::ofstream(path) << text;
          INFO("golden " << path << " (regenerate with OAR_UPDATE_GOLDEN=1 after reviewing)");
          CHECK(text == readFile(path));
        }
      }
}

TEST_CASE("every element of every param lands in exactly one block on one endpoint",
          "[transpiler][property]") {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 200; ++trial) {
    int rank = 1 + rng() % 3, numEndpoints = 1 + rng() % 8;
    std::vector<int64_t> dims;
    for (int d = 0; d < rank; ++d)
      dims.push_back(1 + rng() % (d == 0 ? 5000 : 40));
    int64_t minBlock = 1 + rng() % 20000;
    auto sizes = sliceSizes(dims, numEndpoints, minBlock);
    INFO("dims " << dimsString(dims) << " over " << numEndpoints << ", min block " << minBlock);
    int64_t total = 0, width = numElements(dims) / dims[0];
    for (int64_t s : sizes) {
      CHECK(s > 0);
      if (rank >= 2)
        CHECK(s % width == 0); // whole rows
      total += s;
    }
    CHECK(total == numElements(dims));
    CHECK(static_cast<int64_t>(sizes.size()) <= numEndpoints);
  }
  // Through the full plan: blocks tile each param, endpoints are valid, grads follow params.
  for (int n = 1; n <= 5; ++n)
    for (const char *method : {"round_robin", "hash_name"}) {
      ModelBuilder m = mnistMlp();
      DistributeConfig c = config(n, "sync");
      c.splitMethod = method;
      c.minBlockSize = 1000;
      DistributePlan plan = requireValue(makePlan(m.main(), c));
      for (const ParamPlan &p : plan.params) {
        int64_t next = 0;
        for (const VarBlock &b : p.blocks) {
          CHECK(b.begin == next);
          CHECK(numElements(b.dims) == b.numel);
          CHECK(b.endpointIndex < static_cast<size_t>(n));
          CHECK(b.endpoint == c.pservers[b.endpointIndex]);
          next += b.numel;
        }
        CHECK(next == numElements(p.dims));
      }
    }
}

TEST_CASE("the issue's slicing example: round robin shares one counter across params",
          "[transpiler]") {
  ModelBuilder m = mnistMlp();
  DistributePlan plan = requireValue(makePlan(m.main(), config(2, "sync")));
  std::string text = plan.text();
  // fc_0.w_0 is 784x128 = 100352 elements: max 12 blocks, 2 pservers -> 2 blocks of 392 rows.
  CHECK_THAT(
      text,
      Contains(
          "fc_0.w_0.block0                       392      50176       200704  127.0.0.1:6171"));
  CHECK_THAT(
      text,
      Contains(
          "fc_0.w_0.block1                       392      50176       200704  127.0.0.1:6170"));
  CHECK(fnv1a64("a") == 0xaf63dc4c8601ec8cull); // the FNV-1a test vector
}

TEST_CASE("pserver startups give the single-machine startup's slices", "[transpiler]") {
  for (const char *mode : {"sync", "geo"})
    for (int n : {2, 3}) {
      ModelBuilder m = mnistMlp();
      // Constant fills of split vars (Adam's moments) are written per block: values other than
      // 0 show that each block gets the fill's value.
      for (proto::Op &op : *m.startup().mutable_blocks(0)->mutable_ops())
        if (op.type() == "fill_constant")
          setAttr(op, "value", 0.25f);
      DistributeConfig c = config(n, mode);
      c.minBlockSize = 2000; // more splits
      TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
      Executor exec;
      Scope single;
      REQUIRE_OK(exec.run(m.startup(), single));
      std::vector<Scope> servers(n);
      for (int i = 0; i < n; ++i)
        REQUIRE_OK(exec.run(r.pserverStartup(i), servers[i]));
      for (const ParamPlan &p : r.plan.params) {
        std::vector<std::string> vars{p.param};
        if (std::string(mode) != "geo")
          for (const auto &[slot, var] : p.optimizer.paramShaped)
            vars.push_back(var);
        for (const std::string &var : vars) {
          const Tensor &whole = *single.find(var);
          std::vector<float> joined;
          for (const VarBlock &b : p.blocks) {
            std::string name = p.split() ? blockName(var, b.index) : var;
            const Tensor *t = servers[b.endpointIndex].find(name);
            INFO(mode << " " << n << " pservers: " << name << " on pserver " << b.endpointIndex);
            REQUIRE(t);
            auto v = t->toVector<float>();
            joined.insert(joined.end(), v.begin(), v.end());
          }
          INFO(var);
          CHECK(joined == whole.toVector<float>());
        }
      }
    }
}

TEST_CASE("transpiling twice writes byte-identical files", "[transpiler]") {
  ModelBuilder m = mnistMlp();
  std::string a = scratchDir("det_a"), b = scratchDir("det_b");
  for (const std::string &dir : {a, b}) {
    TranspileResult r = requireValue(transpile(m.main(), m.startup(), config(3, "sync")));
    REQUIRE_OK(writeTranspiled(r, dir, true, "test"));
  }
  for (const char *f : {"trainer.pb", "trainer.startup.pb", "pserver.0.pb", "pserver.2.startup.pb",
                        "pserver.1.pbtxt", "plan.txt"})
    CHECK(readFile(a + "/" + f) == readFile(b + "/" + f));
}

TEST_CASE("a plan that cannot be written is an error naming it", "[transpiler][errors]") {
  // plan.txt links to a device that takes no bytes: the write fails when the stream flushes.
  std::string dir = scratchDir("plan_unwritable");
  llvm::sys::fs::remove(dir + "/plan.txt");
  REQUIRE(!llvm::sys::fs::create_link("/dev/full", dir + "/plan.txt"));
  ModelBuilder m = fitALine();
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), config(2, "sync")));
  CHECK_THAT(errorText(writeTranspiled(r, dir, false, "test")),
             Contains(dir + "/plan.txt: write failed"));
}

TEST_CASE("bad configurations get one-line errors naming them", "[transpiler][errors]") {
  ModelBuilder m = fitALine();
  auto err = [&](DistributeConfig c) { return errorText(transpile(m.main(), m.startup(), c)); };
  DistributeConfig c = config(2, "sync");
  c.trainers = 0;
  CHECK_THAT(err(c), Contains("trainers is 0"));
  c = config(2, "sync");
  c.pservers = {"127.0.0.1:6170", "127.0.0.1:6170"};
  CHECK_THAT(err(c), Contains("127.0.0.1:6170 is listed twice"));
  c.pservers = {"127.0.0.1"};
  CHECK_THAT(err(c), Contains("\"127.0.0.1\" is malformed"));
  c.pservers = {"127.0.0.1:99999"};
  CHECK_THAT(err(c), Contains("\"127.0.0.1:99999\" is malformed"));
  c = config(2, "sync");
  c.trainerId = 2;
  CHECK_THAT(err(c), Contains("trainer_id 2 is out of range for 2 trainers"));
  c = config(2, "sync");
  c.minBlockSize = 0;
  CHECK_THAT(err(c), Contains("min_block_size is 0"));
  // A mode is an enum past the flags and attrs that name it; a bad name is refused there.
  CHECK_THAT(errorText(parseMode("bulk")),
             Contains("mode \"bulk\" must be sync, async, geo or collective"));

  // An update op the transpiler does not know.
  ModelBuilder odd = fitALine();
  for (proto::Op &op : *odd.main().mutable_blocks(0)->mutable_ops())
    if (op.type() == "sgd")
      op.set_type("rmsprop");
  CHECK_THAT(errorText(transpile(odd.main(), odd.startup(), config(1, "sync"))),
             Contains("(rmsprop) updates a parameter but the transpiler does not know"));

  // An update op without the input the plan reads, or reading an undeclared one.
  for (const char *slot : {"Param", "LearningRate"}) {
    ModelBuilder cut = fitALine();
    editInput(cut, "sgd", slot, [](proto::Slot &s) { s.clear_names(); });
    CHECK_THAT(errorText(transpile(cut.main(), cut.startup(), config(1, "sync"))),
               Contains("(sgd) has no " + std::string(slot) + " input"));
  }
  ModelBuilder undeclared = fitALine();
  editInput(undeclared, "sgd", "LearningRate", [](proto::Slot &s) { s.set_names(0, "nowhere"); });
  CHECK_THAT(errorText(transpile(undeclared.main(), undeclared.startup(), config(1, "sync"))),
             Contains("(sgd) reads nowhere as its LearningRate, which is not declared"));
}

TEST_CASE("a distributed lookup table is refused in GEO mode", "[transpiler][errors]") {
  ModelBuilder m;
  std::string ids = m.data("ids", {1}, proto::I64);
  std::string emb = m.embedding(ids, 100, 8, true, /*isDistributed=*/true);
  requireValue(SGD(0.1f).minimize(m, m.mean(emb)));
  CHECK_THAT(errorText(transpile(m.main(), m.startup(), config(1, "geo"))),
             Contains("embedding_0.w_0: distributed tables train in sync or async mode, not geo"));
}

TEST_CASE("a distributed table's lookup or optimizer without its inputs is refused by name",
          "[transpiler][errors]") {
  for (auto [type, slot] : {std::pair{"lookup_table", "W"}, std::pair{"sgd", "LearningRate"}}) {
    ModelBuilder m = tableModel();
    editInput(m, type, slot, [](proto::Slot &s) { s.clear_names(); });
    CHECK_THAT(errorText(transpile(m.main(), m.startup(), config(1, "sync"))),
               Contains("(" + std::string(type) + ") has no " + slot + " input"));
  }
  ModelBuilder m = tableModel();
  editInput(m, "sgd", "LearningRate", [](proto::Slot &s) { s.set_names(0, "nowhere"); });
  CHECK_THAT(errorText(transpile(m.main(), m.startup(), config(1, "sync"))),
             Contains("(sgd) reads nowhere as its LearningRate, which is not declared"));
}

TEST_CASE("the job digest covers the optimizer, its learning rate and the data feed",
          "[transpiler]") {
  auto digestOf = [](RecipeSpec spec) {
    ModelBuilder m = requireValue(buildRecipe(spec));
    DistributeConfig c;
    c.trainers = 2;
    c.pservers = {"127.0.0.1:6170", "127.0.0.1:6171"};
    return requireValue(transpile(m.main(), m.startup(), c)).trainer().dist().plan_digest();
  };
  RecipeSpec base;
  base.format = "uci_housing", base.data = {"housing.data"}; // a feed in the program
  std::string same = digestOf(base);
  CHECK(same == digestOf(base)); // deterministic
  RecipeSpec lr = base, optimizer = base, batch = base;
  lr.lr = base.lr * 2;
  optimizer.optimizer = "momentum";
  batch.batchSize = base.batchSize + 1;
  CHECK(digestOf(lr) != same);
  CHECK(digestOf(optimizer) != same);
  CHECK(digestOf(batch) != same);
}
