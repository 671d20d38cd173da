// Collective training (no pservers): N trainers, each on its share of every step's rows, average
// their gradients by all-reduce. Every trainer must end with the same bits, and those equal one
// machine trained with N times the batch, from the same initial params (acceptance 1 of issue
// 36). The trainers run as threads of this test (runTrainer, each its own Gloo pairs over TCP).
#include <future>
#include <set>

#include "executor/npy.h"
#include "runtime/node/node.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"
#include "transpiler/transpiler.h"

using namespace oar;
using namespace oar::runtime;
using Catch::Matchers::Contains;

namespace {

using Params = std::map<std::string, Tensor>;

/// Gradient buckets of DistributeConfig: the first's bytes and the others' (0: one all-reduce).
struct Buckets {
  int64_t first = int64_t(1) << 20, others = int64_t(25) << 20;
};

/// `dir`'s single-machine model transpiled for a collective job of `trainers`.
NodePrograms collectivePrograms(const std::string &dir, int trainers, Buckets buckets = {}) {
  proto::Program main = requireValue(loadProgram(dir + "/main.pb"));
  proto::Program startup = requireValue(loadProgram(dir + "/startup.pb"));
  DistributeConfig config;
  config.mode = Mode::Collective;
  config.trainers = trainers;
  config.firstBucketBytes = buckets.first, config.bucketBytes = buckets.others;
  TranspileResult job = requireValue(transpile(main, startup, config));
  return NodePrograms{job.trainer(), job.trainerStartup()};
}

/// Trains `dir`'s single-machine model as a collective job of `trainers` threads; trainer 0 loads
/// `init` and saves to `out`. Each trainer's final values of `names` go to the result.
std::vector<Params> trainCollective(const std::string &dir, int trainers, const std::string &init,
                                    const std::string &out, const std::vector<std::string> &names,
                                    Buckets buckets = {}) {
  NodePrograms progs = collectivePrograms(dir, trainers, buckets);
  std::shared_ptr<HeldPort> port = holdPort();
  std::vector<Params> finals(trainers);
  std::vector<std::future<std::string>> ranks;
  for (int r = 0; r < trainers; ++r)
    ranks.push_back(std::async(std::launch::async, [&, r] {
      Node opts;
      opts.cluster.role = Role::Trainer;
      opts.cluster.trainerId = r;
      opts.cluster.trainers = trainers;
      opts.rendezvous = endpointOf(*port);
      opts.options.timeouts.reply = std::chrono::milliseconds(20000);
      if (r == 0)
        opts.heldPort = port, opts.options.loadDir = init, opts.options.saveDir = out;
      opts.train.afterStep = [&finals, &names, r](const StepReport &, const Scope &s) {
        for (const std::string &n : names)
          finals[r][n] = s.find(n)->clone();
        return llvm::Error::success();
      };
      std::optional<EvalResult> test;
      llvm::Error err = runTrainer(progs, opts, test);
      return err ? llvm::toString(std::move(err)) : std::string();
    }));
  for (auto &r : ranks)
    CHECK(r.get() == "");
  return finals;
}

void checkCollectiveEqualsSingle(const std::string &name, const std::string &modelArgs, int batch,
                                 int trainers, const Fixture &f) {
  std::string dir = scratchDir("collective_" + name + "_" + std::to_string(trainers));
  makeModel(dir + "/single", modelArgs + " --batch-size=" + std::to_string(batch));
  makeModel(dir + "/dist", modelArgs + " --batch-size=" + std::to_string(batch / trainers));
  run(binDir() + "/oar-executor --main " + dir + "/single/main.pb --startup " + dir +
      "/single/startup.pb --load " + f.dir + "/init --save " + dir + "/single_out");
  std::vector<Params> finals =
      trainCollective(dir + "/dist", trainers, f.dir + "/init", dir + "/dist_out", f.params);
  for (const std::string &p : f.params) {
    INFO(name << " on " << trainers << " trainers: " << p);
    REQUIRE(finals[0].count(p));
    for (int r = 1; r < trainers; ++r) { // the same bits on every trainer
      REQUIRE(finals[r].count(p));
      CHECK(finals[r][p].bytes() == finals[0][p].bytes());
      CHECK(std::memcmp(finals[r][p].raw(), finals[0][p].raw(), finals[0][p].bytes()) == 0);
    }
    Tensor single = requireValue(readNpy(dir + "/single_out/" + p + ".npy"));
    Tensor saved = requireValue(readNpy(dir + "/dist_out/" + p + ".npy"));
    CHECK(toleranceRatio(saved, single, 1e-4, 1e-6) <= 1.0);
    CHECK(std::memcmp(saved.raw(), finals[0][p].raw(), saved.bytes()) == 0);
  }
}

} // namespace

TEST_CASE("fit_a_line on 2 and 4 collective trainers ends with the same bits on each, equal to "
          "one machine with N times the batch",
          "[e2e][runtime][collective]") {
  int trainers = GENERATE(2, 4);
  Fixture f = loadFixture("fit_a_line_sgd");
  checkCollectiveEqualsSingle("fit_a_line",
                              "--model=linear --in=13 --out=1 --lr=0.01 --epochs=3 "
                              "--format=uci_housing --data=" +
                                  sourceDir() + "/data/uci_housing/housing.data",
                              20, trainers, f);
}

TEST_CASE("the MNIST MLP on 2 and 4 collective trainers ends with the same bits on each, equal to "
          "one machine with N times the batch",
          "[e2e][runtime][collective]") {
  int trainers = GENERATE(2, 4);
  Fixture f = loadFixture("mnist_mlp_momentum");
  checkCollectiveEqualsSingle("mnist_mlp",
                              "--model=mlp --in=784 --hidden=128,64 --out=10 "
                              "--loss=softmax_with_cross_entropy --optimizer=momentum --lr=0.05 "
                              "--momentum=0.9 --epochs=1 --format=npy --data=" +
                                  f.dir + "/x.npy," + f.dir + "/y.npy",
                              64, trainers, f);
}

TEST_CASE("the collective pass averages the dense gradients in one op before the optimizer, or "
          "in buckets started once backward is done with them, and refuses pservers",
          "[transpiler][collective]") {
  std::string dir = scratchDir("collective_program");
  makeFitALine(dir, "--batch-size=10");
  proto::Program main = requireValue(loadProgram(dir + "/main.pb"));
  proto::Program startup = requireValue(loadProgram(dir + "/startup.pb"));
  DistributeConfig config;
  config.mode = Mode::Collective;
  config.trainers = 3;
  config.bucketBytes = 0; // one all-reduce after backward
  TranspileResult job = requireValue(transpile(main, startup, config));
  CHECK(job.numPservers() == 0);
  auto firstOptimizer = [](const proto::Block &block) {
    for (int i = 0; i < block.ops_size(); ++i)
      if (block.ops(i).role() == proto::OPTIMIZE)
        return i;
    return -1;
  };
  const proto::Block &block = job.trainer().blocks(0);
  int allreduce = -1;
  for (int i = 0; i < block.ops_size(); ++i) {
    if (block.ops(i).type() == "c_allreduce_avg")
      allreduce = i;
    CHECK(block.ops(i).type() != "send");
  }
  REQUIRE(allreduce >= 0);
  CHECK(allreduce + 1 == firstOptimizer(block));
  CHECK(opInputs(block.ops(allreduce), "X") ==
        std::vector<std::string>{"fc_0.b_0@GRAD", "fc_0.w_0@GRAD"});
  CHECK(job.trainer().dist().mode() == "collective");
  CHECK(job.trainer().dist().trainers() == 3);

  // The defaults (DDP's: 1 MiB, then 25 MiB): fit_a_line's 56 bytes of gradients are one bucket,
  // which backward finishes with at its very end: nothing to overlap, so the same one op.
  config.firstBucketBytes = int64_t(1) << 20, config.bucketBytes = int64_t(25) << 20;
  job = requireValue(transpile(main, startup, config));
  const proto::Block &defaults = job.trainer().blocks(0);
  int avg = -1;
  for (int i = 0; i < defaults.ops_size(); ++i) {
    CHECK(defaults.ops(i).type() != "c_allreduce_start");
    if (defaults.ops(i).type() == "c_allreduce_avg")
      avg = i;
  }
  CHECK(avg + 1 == firstOptimizer(defaults));

  config.pservers = {"127.0.0.1:6170"};
  CHECK_THAT(errorText(transpile(main, startup, config)),
             Contains("collective mode has no pservers"));
  config.pservers.clear();
  config.firstBucketBytes = 0;
  CHECK_THAT(errorText(transpile(main, startup, config)),
             Contains("the first needs at least 1 byte"));
}

TEST_CASE("buckets of an MLP's gradients start in backward's order, each once nothing touches its "
          "gradients until their wait",
          "[transpiler][collective]") {
  std::string dir = scratchDir("collective_buckets");
  Fixture f = loadFixture("mnist_mlp_momentum");
  // fc_0 784x128 (401,408 bytes), fc_1 128x64 (32,768), fc_2 64x10 (2,560), and their biases.
  makeModel(dir, "--model=mlp --in=784 --hidden=128,64 --out=10 "
                 "--loss=softmax_with_cross_entropy --batch-size=8 --format=npy --data=" +
                     f.dir + "/x.npy," + f.dir + "/y.npy");
  proto::Program main = requireValue(loadProgram(dir + "/main.pb"));
  proto::Program startup = requireValue(loadProgram(dir + "/startup.pb"));
  DistributeConfig config;
  config.mode = Mode::Collective;
  config.trainers = 2;
  config.firstBucketBytes = 1024, config.bucketBytes = 30000;
  TranspileResult job = requireValue(transpile(main, startup, config));
  const proto::Block &block = job.trainer().blocks(0);
  std::map<int64_t, int> startAt, waitAt;
  std::map<int64_t, std::vector<std::string>> grads;
  int firstOptimizer = -1;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &op = block.ops(i);
    if (op.role() == proto::OPTIMIZE && firstOptimizer < 0)
      firstOptimizer = i;
    for (const proto::Attr &a : op.attrs())
      if (a.name() == "bucket") {
        (op.type() == "c_allreduce_start" ? startAt : waitAt)[a.i()] = i;
        grads[a.i()] = opInputs(op, "X");
      }
  }
  // The last layer's gradients first: fc_2 (2,600 bytes, past the first bucket's 1 KiB), then
  // fc_1 (33,024, past 30,000), then fc_0's, which backward finishes at its end: those are
  // summed after the others' waits, on the trainer's thread.
  REQUIRE(startAt.size() == 2);
  REQUIRE(waitAt.size() == 2);
  CHECK(grads[0] == std::vector<std::string>{"fc_2.b_0@GRAD", "fc_2.w_0@GRAD"});
  CHECK(grads[1] == std::vector<std::string>{"fc_1.b_0@GRAD", "fc_1.w_0@GRAD"});
  REQUIRE(block.ops(firstOptimizer - 1).type() == "c_allreduce_avg");
  CHECK(opInputs(block.ops(firstOptimizer - 1), "X") ==
        std::vector<std::string>{"fc_0.b_0@GRAD", "fc_0.w_0@GRAD"});
  for (int64_t b = 0; b < 2; ++b) {
    INFO("bucket " << b);
    CHECK(waitAt[b] < firstOptimizer - 1);
    CHECK(startAt[b] < waitAt[b]);
    if (b > 0) // backward's order
      CHECK(startAt[b - 1] < startAt[b]);
    // The op just before the start touches one of its grads; none between start and wait does.
    std::set<std::string> own(grads[b].begin(), grads[b].end());
    auto touches = [&](const proto::Op &op) {
      for (const auto *slots : {&op.inputs(), &op.outputs()})
        for (const proto::Slot &s : *slots)
          for (const std::string &n : s.names())
            if (own.count(n))
              return true;
      return false;
    };
    CHECK(touches(block.ops(startAt[b] - 1)));
    for (int i = startAt[b] + 1; i < waitAt[b]; ++i)
      if (block.ops(i).type() != "c_allreduce_start") {
        INFO("op #" << i << " " << block.ops(i).type());
        CHECK_FALSE(touches(block.ops(i)));
      }
  }
  int backwardAfterFirst = 0; // the first bucket starts while backward has layers left to do
  for (int i = startAt[0] + 1; i < waitAt[0]; ++i)
    backwardAfterFirst += llvm::StringRef(block.ops(i).type()).endswith("_grad");
  CHECK(backwardAfterFirst >= 4);
}

TEST_CASE("gradient buckets started during backward give the bits of one all-reduce after it",
          "[e2e][runtime][collective]") {
  int trainers = GENERATE(2, 3);
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("collective_buckets_e2e_" + std::to_string(trainers));
  makeModel(dir + "/dist", "--model=mlp --in=784 --hidden=128,64 --out=10 "
                           "--loss=softmax_with_cross_entropy --optimizer=momentum --lr=0.05 "
                           "--momentum=0.9 --epochs=1 --batch-size=16 --format=npy --data=" +
                               f.dir + "/x.npy," + f.dir + "/y.npy");
  // Ranks on one host sum each element in rank order, whatever the buckets: the same bits.
  std::vector<Params> once = trainCollective(dir + "/dist", trainers, f.dir + "/init",
                                             dir + "/once", f.params, Buckets{1, 0});
  std::vector<Params> bucketed = trainCollective(dir + "/dist", trainers, f.dir + "/init",
                                                 dir + "/bucketed", f.params, Buckets{1024, 30000});
  for (const std::string &p : f.params) {
    INFO(p);
    for (int r = 0; r < trainers; ++r) {
      REQUIRE(once[r].count(p));
      REQUIRE(bucketed[r].count(p));
      CHECK(std::memcmp(once[r][p].raw(), bucketed[r][p].raw(), once[r][p].bytes()) == 0);
    }
  }
}

TEST_CASE("a collective trainer that fails mid-job ends the other within seconds, not at a "
          "timeout",
          "[e2e][runtime][collective][fault]") {
  std::string dir = scratchDir("collective_trainer_fails");
  makeFitALine(dir, "--batch-size=10 --epochs=50");
  NodePrograms progs = collectivePrograms(dir, 2);
  std::shared_ptr<HeldPort> port = holdPort();
  std::vector<std::future<std::string>> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.push_back(std::async(std::launch::async, [&, r] {
      Node opts;
      opts.cluster.role = Role::Trainer;
      opts.cluster.trainerId = r;
      opts.cluster.trainers = 2;
      opts.rendezvous = endpointOf(*port);
      opts.options.timeouts.reply =
          std::chrono::milliseconds(60000); // the wait it must not sit out
      if (r == 0)
        opts.heldPort = port;
      else // trainer 1 fails at step 20, as a crash in its step would
        opts.train.afterStep = [](const StepReport &report, const Scope &) -> llvm::Error {
          return report.step == 20 ? makeError("injected failure") : llvm::Error::success();
        };
      std::optional<EvalResult> test;
      llvm::Error err = runTrainer(progs, opts, test);
      return err ? llvm::toString(std::move(err)) : std::string();
    }));
  auto start = std::chrono::steady_clock::now();
  std::string survivor = ranks[0].get(), failed = ranks[1].get();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK_THAT(failed, Contains("trainer 1") && Contains("injected failure"));
  CHECK_THAT(survivor, Contains("rank 0 of 2: all-reduce failed"));
  CHECK(seconds < 30); // far below the 60 s timeout: the closed pairs end it
}

// The training toolkit on collective trainers: decay, clipping (of the averaged gradient, as one
// machine clips its whole batch's) and schedules (issue 37, acceptance 3).
TEST_CASE("the MNIST MLP with AdamW, clipping, a cosine schedule and warm-up on 2 collective "
          "trainers equals one machine with twice the batch",
          "[e2e][runtime][collective][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  checkCollectiveEqualsSingle("mnist_mlp_toolkit",
                              "--model=mlp --in=784 --hidden=128,64 --out=10 "
                              "--loss=softmax_with_cross_entropy --optimizer=adamw --lr=0.003 "
                              "--weight-decay=0.01 --clip-global-norm=0.5 --lr-schedule=cosine "
                              "--lr-decay-steps=10 --warmup-steps=3 --epochs=1 --format=npy "
                              "--data=" +
                                  f.dir + "/x.npy," + f.dir + "/y.npy",
                              64, 2, f);
}

TEST_CASE("fit_a_line with L2 decay, Adam and an exponential schedule on 2 collective trainers "
          "equals one machine with twice the batch",
          "[e2e][runtime][collective][toolkit]") {
  Fixture f = loadFixture("fit_a_line_l2_adam_exponential");
  checkCollectiveEqualsSingle("fit_a_line_toolkit",
                              "--model=linear --in=13 --out=1 --optimizer=adam --lr=0.05 "
                              "--weight-decay=0.001 --lr-schedule=exponential "
                              "--lr-decay-steps=10 --lr-decay-rate=0.8 --warmup-steps=3 "
                              "--epochs=2 --format=uci_housing --data=" +
                                  sourceDir() + "/data/uci_housing/housing.data",
                              20, 2, f);
}
