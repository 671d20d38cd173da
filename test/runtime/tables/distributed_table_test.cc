// Distributed tables: rows made on the pservers by push, pulled by key, and sync training that
// gives the same numbers on 1, 2 and 3 pservers.
#include <cstring>
#include <fstream>
#include <future>
#include <random>

#include "api/optimizer.h"
#include "executor/npy.h"
#include "ir/listing.h"
#include "ops/op_registry.h"
#include "runtime/cluster/launcher.h"
#include "runtime/node/node.h"
#include "runtime/pserver/pserver_tables.h"
#include "runtime/tables/sparse_table.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/ports.h"
#include "transpiler/transpiler.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;

namespace {

const char *kTable = "embedding_0.w_0";

/// 3 slots of ids -> a [vocab, 8] table (distributed) -> fc(16, relu) -> fc(1) -> logistic loss.
/// The data: each row's label is set by the parity of its first id (a rule the table can learn).
ModelBuilder tableModel(const std::string &dir, Optimizer &&opt, int64_t rows, int64_t vocab,
                        int64_t width = 8, bool twoLookups = false) {
  ModelBuilder m(/*seed=*/5);
  std::string ids = m.data("ids", {3}, proto::I64);
  std::string y = m.data("y", {1});
  std::string emb = m.embedding(ids, vocab, width, /*isSparse=*/true, /*isDistributed=*/true);
  if (twoLookups) { // the same table again, on the ids in reverse: two pushes a step
    std::string reversed = requireValue(m.appendOp("scale", {{"X", {emb}}}, {"Out"}))[0];
    std::string again =
        requireValue(m.appendOp("lookup_table", {{"W", {kTable}}, {"Ids", {ids}}}, {"Out"},
                                {{"is_sparse", true}, {"is_distributed", true}}))[0];
    emb = requireValue(
        m.appendOp("elementwise_add", {{"X", {reversed}}, {"Y", {again}}}, {"Out"}))[0];
  }
  std::string h = m.fc(m.reshape(emb, {-1, 3 * width}), 16, "relu");
  std::string loss = m.mean(m.sigmoidCrossEntropyWithLogits(m.fc(h, 1), y));
  requireValue(opt.minimize(m, loss));
  std::mt19937_64 rng(7);
  std::vector<int64_t> idv;
  std::vector<float> yv;
  for (int64_t r = 0; r < rows; ++r) {
    for (int s = 0; s < 3; ++s)
      idv.push_back(static_cast<int64_t>(rng() % static_cast<uint64_t>(vocab)));
    yv.push_back(static_cast<float>(idv[r * 3] % 2));
  }
  REQUIRE_OK(writeNpy(dir + "/ids.npy", Tensor::fromVector<int64_t>({rows, 3}, idv)));
  REQUIRE_OK(writeNpy(dir + "/y.npy", Tensor::fromVector<float>({rows, 1}, yv)));
  proto::DataFeed &feed = *m.main().mutable_train_feed();
  feed.set_format("npy");
  feed.add_files(dir + "/ids.npy");
  feed.add_files(dir + "/y.npy");
  feed.add_columns("ids");
  feed.add_columns("y");
  feed.set_batch_size(32);
  feed.set_epochs(2);
  return m;
}

struct JobResult {
  std::vector<float> losses; // trainer 0's, per step
  Tensor fcWeight;           // trainer 0's copy of the first fc's weights at the end
};

/// Runs `m` with 2 trainers and `pservers` pservers as threads of this process.
JobResult runJob(ModelBuilder &m, int pservers, const std::string &mode) {
  DistributeConfig c;
  c.trainers = 2;
  c.mode = llvm::cantFail(parseMode(mode));
  std::vector<std::shared_ptr<HeldPort>> ports;
  for (int i = 0; i < pservers; ++i) {
    ports.push_back(holdPort());
    c.pservers.push_back(endpointOf(*ports.back()));
  }
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  std::vector<std::future<llvm::Error>> nodes;
  for (int i = 0; i < pservers; ++i)
    nodes.push_back(std::async(std::launch::async, [&, i] {
      Node opts;
      opts.heldPort = ports[i];
      opts.cluster.role = Role::Pserver;
      return runPserver({r.pserver(i), r.pserverStartup(i)}, opts);
    }));
  JobResult result;
  std::string saveDir = scratchDir("distributed_table_save_" + std::to_string(pservers) + mode);
  for (int t = 0; t < 2; ++t)
    nodes.push_back(std::async(std::launch::async, [&, t] {
      Node opts;
      opts.cluster.trainerId = t;
      if (t == 0) {
        opts.onStep = [&](const StepReport &s) { result.losses.push_back(s.loss); };
        opts.options.saveDir = saveDir;
      }
      std::optional<EvalResult> eval;
      return runTrainer({r.trainer(), r.trainerStartup()}, opts, eval);
    }));
  for (auto &n : nodes)
    REQUIRE_OK(n.get());
  result.fcWeight = requireValue(readNpy(saveDir + "/fc_0.w_0.npy"));
  return result;
}

/// Whether `prog` declares `var` or has an op that reads or writes it.
bool holdsVar(const proto::Program &prog, llvm::StringRef var) {
  for (const proto::Block &b : prog.blocks()) {
    if (findVar(b, var))
      return true;
    for (const proto::Op &op : b.ops())
      if (llvm::is_contained(allInputNames(op), var) || llvm::is_contained(allOutputNames(op), var))
        return true;
  }
  return false;
}

/// This process's peak resident memory (VmHWM), in bytes.
int64_t peakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stoll(line.substr(6)) * 1024;
  return -1;
}

} // namespace

TEST_CASE("the distributed-table pass leaves no trace of the table on the trainer",
          "[transpiler][sparse]") {
  std::string dir = scratchDir("distributed_table_pass");
  ModelBuilder m = tableModel(dir, Adagrad(0.1f), 64, 1000);
  DistributeConfig c;
  c.trainers = 2;
  c.pservers = {"127.0.0.1:7001", "127.0.0.1:7002"};
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  std::string trainer = listing(r.trainer(), true);
  CHECK_THAT(trainer, Contains("distributed_lookup_table"));
  CHECK_THAT(trainer, Contains("distributed_push_sparse"));
  CHECK(!holdsVar(r.trainer(), kTable));
  CHECK(!holdsVar(r.trainerStartup(), kTable));
  for (size_t i = 0; i < r.numPservers(); ++i) {
    std::string ps = listing(r.pserver(i), true);
    CHECK_THAT(ps, Contains("sparse_table"));
    CHECK_THAT(ps, Contains("optimizer=\"adagrad\""));
    CHECK(!holdsVar(r.pserver(i), kTable));
    CHECK(!holdsVar(r.pserverStartup(i), kTable));
  }
  CHECK_THAT(r.plan.text(), Contains("1000 virtual shards (adagrad)"));
}

TEST_CASE("an op that reads a distributed table or its gradient is refused by name",
          "[transpiler][sparse]") {
  ModelBuilder m(1);
  std::string ids = m.data("ids", {1}, proto::I64);
  std::string emb = m.embedding(ids, 100, 4, true, /*isDistributed=*/true);
  // A second reader of the table: scaling it is something only a whole table allows.
  std::string scaled = requireValue(m.appendOp("scale", {{"X", {kTable}}}, {"Out"}))[0];
  (void)scaled;
  std::string loss = m.mean(m.fc(emb, 1));
  requireValue(SGD(0.1f).minimize(m, loss));
  DistributeConfig c;
  c.pservers = {"127.0.0.1:7001"};
  auto r = transpile(m.main(), m.startup(), c);
  REQUIRE(!r);
  CHECK_THAT(llvm::toString(r.takeError()),
             Contains("(scale) reads distributed table embedding_0.w_0"));
}

TEST_CASE("a pserver program's sparse_table without a learning rate or shards is refused",
          "[runtime][sparse][errors]") {
  ModelBuilder m(1);
  std::string ids = m.data("ids", {1}, proto::I64);
  requireValue(SGD(0.1f).minimize(m, m.mean(m.embedding(ids, 100, 4, true, true))));
  DistributeConfig c;
  c.pservers = {"127.0.0.1:7001"};
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  Scope scope;
  REQUIRE_OK(Executor().run(r.pserverStartup(0), scope));
  proto::Program pserver = r.pserver(0);
  PserverTables whole;
  REQUIRE_OK(whole.init(pserver, scope, 1));
  for (proto::Op &op : *pserver.mutable_blocks(0)->mutable_ops())
    if (op.type() == "sparse_table")
      op.mutable_inputs(0)->clear_names();
  PserverTables cut;
  CHECK_THAT(errorText(cut.init(pserver, scope, 1)),
             Contains("sparse_table embedding_0.w_0: no LearningRate input"));
  pserver = r.pserver(0);
  for (proto::Op &op : *pserver.mutable_blocks(0)->mutable_ops())
    if (op.type() == "sparse_table")
      setAttr(op, "num_shards", int64_t(0)); // a key's shard is a hash mod num_shards
  PserverTables unsharded;
  CHECK_THAT(errorText(unsharded.init(pserver, scope, 1)),
             Contains("sparse_table embedding_0.w_0: num_shards 0 must be at least 1"));
}

TEST_CASE("a table row starts from (seed, table, key) alone and is stored only once pushed",
          "[runtime][sparse]") {
  SparseTableConfig c{
      .name = "t", .width = 4, .init = "uniform", .initA = -0.5f, .initB = 0.5f, .seed = 9};
  SparseTable a(c), b(c);
  std::vector<uint64_t> keys = {3, 1ull << 60, 3};
  std::vector<float> ra(12), rb(12);
  a.pull(keys, ra.data());
  CHECK(a.rows() == 0); // a pull stores nothing
  b.pull({keys[1], keys[0]}, rb.data());
  CHECK(std::memcmp(ra.data(), rb.data() + 4, 16) == 0);
  CHECK(std::memcmp(ra.data() + 4, rb.data(), 16) == 0);
  CHECK(std::memcmp(ra.data(), ra.data() + 8, 16) == 0);
  CHECK(std::memcmp(ra.data(), ra.data() + 4, 16) != 0);
  for (float v : ra)
    CHECK((v >= -0.5f && v < 0.5f));
  c.name = "u"; // another table starts elsewhere
  SparseTable other(c);
  std::vector<float> ro(4);
  other.pull({3}, ro.data());
  CHECK(std::memcmp(ra.data(), ro.data(), 16) != 0);
}

TEST_CASE("table optimizers match their formulas on a pushed row", "[runtime][sparse]") {
  auto run = [](SparseTableConfig c, std::vector<std::vector<float>> grads) {
    c.name = "t";
    c.width = 2;
    c.init = "constant";
    c.initA = 1.0f;
    SparseTable t(c);
    for (const auto &g : grads)
      t.push({42}, g.data(), 0.1f, 0.5f);
    std::vector<float> w(2);
    t.pull({42}, w.data());
    CHECK(t.rows() == 1);
    return w;
  };
  SparseTableConfig sgd;
  auto w = run(sgd, {{2.0f, -4.0f}});
  CHECK(w[0] == Approx(1.0f - 0.1f * 1.0f));
  CHECK(w[1] == Approx(1.0f + 0.1f * 2.0f));
  SparseTableConfig adagrad;
  adagrad.optimizer = "adagrad";
  w = run(adagrad, {{2.0f, -4.0f}, {2.0f, -4.0f}});
  // g = (1, -2) twice: s = g^2 then 2 g^2; each step p -= 0.1 g / (sqrt(s) + 1e-6)
  CHECK(w[0] == Approx(1.0f - 0.1f * (1.0f / 1.0f + 1.0f / std::sqrt(2.0f))).epsilon(1e-5));
  CHECK(w[1] == Approx(1.0f + 0.1f * (2.0f / 2.0f + 2.0f / std::sqrt(8.0f))).epsilon(1e-5));
  adagrad.rowWise = true;
  w = run(adagrad, {{2.0f, -4.0f}});
  // one accumulator: s = mean(1, 4) = 2.5
  CHECK(w[0] == Approx(1.0f - 0.1f * 1.0f / std::sqrt(2.5f)).epsilon(1e-5));
  SparseTableConfig adam;
  adam.optimizer = "adam";
  adam.epsilon = 1e-8f;
  w = run(adam, {{2.0f, -4.0f}});
  // first step of adam moves each weight by lr * sign(g) (up to epsilon)
  CHECK(w[0] == Approx(0.9f).epsilon(1e-5));
  CHECK(w[1] == Approx(1.1f).epsilon(1e-5));
}

TEST_CASE("a table declared with 10^9 rows holds only the rows pushed", "[runtime][sparse]") {
  SparseTableConfig c{.name = "huge", .width = 16, .optimizer = "adagrad", .rowWise = true};
  SparseTable t(c);
  std::vector<uint64_t> keys;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i)
    keys.push_back(rng() % 1000000000ull);
  std::vector<float> grads(keys.size() * 16, 0.01f);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  t.push(keys, grads.data(), 0.1f, 1.0f);
  CHECK(t.rows() == keys.size());
  // Per row: its floats, its key, and its stats (the step of its last push and its push count,
  // 4 bytes each, which eviction and an export's shrink read).
  double payload = static_cast<double>(keys.size()) * (16 + 1) * 4 + keys.size() * (8.0 + 8.0);
  INFO("bytes held " << t.bytesHeld() << " for a payload of " << payload);
  CHECK(static_cast<double>(t.bytesHeld()) < 1.6 * payload);
}

TEST_CASE("sync training with a distributed table gives the same bits on 1, 2 and 3 pservers",
          "[e2e][runtime][sparse]") {
  std::string dir = scratchDir("distributed_table_sync");
  ModelBuilder m = tableModel(dir, Adagrad(0.2f), 256, 5000);
  JobResult one = runJob(m, 1, "sync"), two = runJob(m, 2, "sync"), three = runJob(m, 3, "sync");
  REQUIRE(one.losses.size() == 8); // 256 rows / 2 trainers / 32 per batch x 2 epochs
  CHECK(one.losses == two.losses);
  CHECK(one.losses == three.losses);
  CHECK(sameBits(one.fcWeight, two.fcWeight));
  CHECK(sameBits(one.fcWeight, three.fcWeight));
  CHECK(one.losses.back() < one.losses.front());
}

TEST_CASE("async training with a distributed table learns", "[e2e][runtime][sparse]") {
  std::string dir = scratchDir("distributed_table_async");
  ModelBuilder m = tableModel(dir, Adagrad(0.2f), 256, 5000);
  JobResult r = runJob(m, 2, "async");
  REQUIRE(r.losses.size() == 8);
  CHECK(r.losses.back() < r.losses.front());
}

TEST_CASE("a 10^9 x 16 table trains on 2 pservers in memory bounded by the rows touched",
          "[e2e][runtime][sparse]") {
  std::string dir = scratchDir("distributed_table_huge");
  // Dense, the table alone would be 64 GB; its adagrad state as much again.
  ModelBuilder m = tableModel(dir, Adagrad(0.1f), 512, 1000000000, 16);
  int64_t before = peakResidentBytes();
  REQUIRE(before > 0);
  JobResult r = runJob(m, 2, "sync");
  CHECK(r.losses.size() == 16);
  // 2 trainers and 2 pservers ran in this process; at most 1,536 rows were touched.
  int64_t grown = peakResidentBytes() - before;
  INFO("peak resident memory grew by " << grown << " bytes");
  CHECK(grown < (int64_t(256) << 20));
}

TEST_CASE("a count filter admits a key at its Nth push: the pushes before change nothing",
          "[runtime][sparse]") {
  SparseTableConfig c{.name = "t", .width = 2, .init = "constant", .initA = 1.0f, .admitAfter = 3};
  SparseTable t(c);
  std::vector<float> g = {1.0f, 2.0f}, w(2);
  t.push({7}, g.data(), 0.5f, 1.0f);
  t.push({7}, g.data(), 0.5f, 1.0f);
  CHECK(t.rows() == 0);
  CHECK(t.pendingKeys() == 1);
  t.pull({7}, w.data());
  CHECK(w == std::vector<float>{1.0f, 1.0f});
  t.push({7}, g.data(), 0.5f, 1.0f); // admitted: this push alone applies
  CHECK(t.rows() == 1);
  CHECK(t.pendingKeys() == 0);
  t.pull({7}, w.data());
  CHECK(w == std::vector<float>{0.5f, 0.0f});
}

TEST_CASE("a probability filter admits the same share of keys on every pserver",
          "[runtime][sparse]") {
  SparseTableConfig c{.name = "t", .width = 1, .admitProbability = 0.25f};
  SparseTable a(c), b(c);
  std::vector<uint64_t> keys(20000);
  for (size_t i = 0; i < keys.size(); ++i)
    keys[i] = i * 7919;
  std::vector<float> g(keys.size(), 1.0f);
  a.push(keys, g.data(), 0.1f, 1.0f);
  // b sees the keys in two halves, as two pservers would.
  size_t half = keys.size() / 2;
  b.push(llvm::ArrayRef(keys).take_front(half), g.data(), 0.1f, 1.0f);
  b.push(llvm::ArrayRef(keys).drop_front(half), g.data(), 0.1f, 1.0f);
  CHECK(a.rows() > 4500);
  CHECK(a.rows() < 5500);
  CHECK(a.rows() == b.rows());
  std::vector<uint64_t> inA, inB;
  a.forEachRow([&](uint64_t k, const float *) { inA.push_back(k); });
  b.forEachRow([&](uint64_t k, const float *) { inB.push_back(k); });
  std::sort(inA.begin(), inA.end());
  std::sort(inB.begin(), inB.end());
  CHECK(inA == inB);
}

TEST_CASE("rows unseen for evict_after steps are dropped and their memory reused",
          "[runtime][sparse]") {
  SparseTableConfig c{.name = "t", .width = 4, .evictAfter = 2};
  SparseTable t(c);
  std::vector<float> g(4 * 1000, 0.1f);
  std::vector<uint64_t> first(1000), second(1000), third(1000);
  for (uint64_t i = 0; i < 1000; ++i)
    first[i] = i, second[i] = 10000 + i, third[i] = 20000 + i;
  t.push(first, g.data(), 0.1f, 1.0f);
  CHECK(t.endStep() == 0);
  t.push(second, g.data(), 0.1f, 1.0f);
  CHECK(t.endStep() == 1000); // step 2: `first` was last pushed at step 0
  CHECK(t.rows() == 1000);
  size_t held = t.bytesHeld();
  t.push(third, g.data(), 0.1f, 1.0f); // takes the rows `first` left
  CHECK(t.rows() == 2000);
  CHECK(t.bytesHeld() == held);
  std::vector<float> w(4), init(4);
  t.pull({5}, w.data()); // an evicted key reads its initial weights again
  t.initialWeights(5, init.data());
  CHECK(w == init);
}

TEST_CASE("two lookups of one distributed table: their pushes are summed, the same on 1 and 2 "
          "pservers",
          "[e2e][runtime][sparse]") {
  std::string dir = scratchDir("distributed_table_two_lookups");
  ModelBuilder m = tableModel(dir, SGD(0.5f), 256, 5000, 8, /*twoLookups=*/true);
  // The single-machine program sums the two lookups' gradients; the pass drops that sum.
  DistributeConfig c;
  c.pservers = {"127.0.0.1:7001"};
  c.trainers = 2;
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  int pushes = 0;
  for (const proto::Op &op : r.trainer().blocks(0).ops())
    pushes += op.type() == "distributed_push_sparse";
  CHECK(pushes == 2);
  JobResult one = runJob(m, 1, "sync"), two = runJob(m, 2, "sync");
  REQUIRE(one.losses.size() == 8);
  CHECK(one.losses == two.losses);
  CHECK(sameBits(one.fcWeight, two.fcWeight));
  CHECK(one.losses.back() < one.losses.front());
}

TEST_CASE("a lookup's admission and eviction attrs reach the pservers' sparse_table",
          "[transpiler][sparse]") {
  std::string dir = scratchDir("distributed_table_admission");
  ModelBuilder m = tableModel(dir, Adagrad(0.1f), 64, 1000);
  for (proto::Op &op : *m.main().mutable_blocks(0)->mutable_ops())
    if (op.type() == "lookup_table") {
      setAttr(op, "admit_after", AttrValue(int64_t(3)));
      setAttr(op, "admit_probability", AttrValue(0.5f));
      setAttr(op, "evict_after", AttrValue(int64_t(7)));
    }
  DistributeConfig c;
  c.trainers = 2;
  c.pservers = {"127.0.0.1:7001", "127.0.0.1:7002"};
  TranspileResult r = requireValue(transpile(m.main(), m.startup(), c));
  for (size_t i = 0; i < r.numPservers(); ++i) {
    const proto::Op *table = nullptr;
    for (const proto::Op &op : r.pserver(i).blocks(0).ops())
      if (op.type() == "sparse_table")
        table = &op;
    REQUIRE(table);
    ops::AttrReader attrs(*table, *ops::lookupOp("sparse_table"));
    CHECK(attrs.getInt("admit_after") == 3);
    CHECK(attrs.getFloat("admit_probability") == 0.5f);
    CHECK(attrs.getInt("evict_after") == 7);
  }
}
