// Collective jobs as processes: oar-launch --mode collective, and trainers started by hand from
// Paddle's collective variables or TF_CONFIG (test/runtime/collective_job.sh). A killed trainer
// ends every other within seconds, each naming it; trainers that would take different step
// counts are refused before the first step.
#include <regex>
#include <sstream>

#include "executor/npy.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

std::string fitALineArgs(int batch, int epochs) {
  return "--model=linear --in=13 --out=1 --lr=0.01 --format=uci_housing --data=" + sourceDir() +
         "/data/uci_housing/housing.data --batch-size=" + std::to_string(batch) +
         " --epochs=" + std::to_string(epochs);
}

/// oar-model flags of an MLP on the MNIST fixture's rows (`data`: its x.npy,y.npy), trained and
/// tested on them, with `more` (layers, optimizer, toolkit).
std::string mnistMlpArgs(const std::string &data, const std::string &more) {
  return "--model=mlp --in=784 --out=10 --loss=softmax_with_cross_entropy --batch-size=32 "
         "--format=npy --data=" +
         data + " --test-data=" + data + " " + more;
}

/// Runs collective_job.sh: `trainers` trainers of `model` by hand, trainer 0 given the held
/// rendezvous port; returns each trainer's "<status> <ms from the kill to its end>".
std::vector<std::pair<int, long>> runByHand(const std::string &model, const std::string &out,
                                            int trainers, const std::string &victim,
                                            const std::string &convention,
                                            const std::string &flags) {
  auto port = holdPort();
  handOver(*port);
  std::string lines = run("PORT_FD=" + std::to_string(port->fd()) + " CONVENTION=" + convention +
                          " " + sourceDir() + "/test/runtime/collective_job.sh " + binDir() + " " +
                          model + " " + out + " " + std::to_string(port->port()) + " " +
                          std::to_string(trainers) + " " + victim + " " + flags);
  std::vector<std::pair<int, long>> ends;
  std::istringstream in(lines);
  std::regex end("trainer\\.[0-9]+ ([0-9]+) (-?[0-9]+)");
  std::smatch m;
  for (std::string line; std::getline(in, line);) // the shell's job messages come between
    if (std::regex_match(line, m, end))
      ends.emplace_back(std::stoi(m[1]), std::stol(m[2]));
  CAPTURE(lines);
  REQUIRE(ends.size() == size_t(trainers));
  return ends;
}

void checkSameBits(const std::string &dir, const std::string &other, const std::string &param) {
  Tensor a = requireValue(readNpy(dir + "/" + param + ".npy"));
  Tensor b = requireValue(readNpy(other + "/" + param + ".npy"));
  REQUIRE(a.bytes() == b.bytes());
  CHECK(std::memcmp(a.raw(), b.raw(), a.bytes()) == 0);
}

} // namespace

TEST_CASE("oar-launch --mode collective trains fit_a_line on 2 trainer processes to one "
          "machine's result with twice the batch, and so do trainers met through a scheduler and "
          "trainers started by hand",
          "[e2e][runtime][collective]") {
  Fixture f = loadFixture("fit_a_line_sgd");
  std::string dir = scratchDir("collective_launch");
  makeModel(dir + "/single", fitALineArgs(20, 3));
  makeModel(dir + "/dist", fitALineArgs(10, 3));
  run(binDir() + "/oar-executor --main " + dir + "/single/main.pb --startup " + dir +
      "/single/startup.pb --load " + f.dir + "/init --save " + dir + "/single_out");
  std::string launched = run(binDir() + "/oar-launch --mode collective --worker-num=2 --load " +
                             f.dir + "/init --save " + dir + "/launched " + dir + "/dist");
  CHECK_THAT(launched, Contains("oar-launch: all 2 nodes finished"));
  for (const std::string &p : f.params) {
    INFO(p);
    Tensor single = requireValue(readNpy(dir + "/single_out/" + p + ".npy"));
    Tensor saved = requireValue(readNpy(dir + "/launched/" + p + ".npy"));
    CHECK(toleranceRatio(saved, single, 1e-4, 1e-6) <= 1.0);
  }
  // Through a scheduler, where the trainers learn trainer 0's endpoint: the same bits.
  std::string scheduled = run(binDir() +
                              "/oar-launch --mode collective --scheduler "
                              "--worker-num=2 --load " +
                              f.dir + "/init --save " + dir + "/scheduled " + dir + "/dist");
  CHECK_THAT(scheduled, Contains("this node is trainer 1 of 0 pserver(s) and 2 trainer(s)"));
  for (const std::string &p : f.params)
    checkSameBits(dir + "/scheduled", dir + "/launched", p);
  // By hand, from either convention's variables: the same job, so the same bits.
  for (std::string convention : {"paddle", "tf", "mindspore"}) {
    INFO(convention);
    std::string out = dir + "/by_hand_" + convention;
    auto ends = runByHand(dir + "/dist", out, 2, "none", convention,
                          "--load " + f.dir + "/init --save " + out + "/saved");
    CHECK(ends[0].first == 0);
    CHECK(ends[1].first == 0);
    for (const std::string &p : f.params)
      checkSameBits(out + "/saved", dir + "/launched", p);
  }
}

TEST_CASE("a collective trainer killed mid-job: every other exits non-zero within 10 s, naming "
          "it",
          "[e2e][runtime][collective][fault]") {
  std::string dir = scratchDir("collective_kill");
  // Gloo does not wake every wait when a pair closes (a send queued to a rank that died): the
  // group's watchdog ends such a trainer after 2 s instead of the 60 s timeout.
  makeModel(dir + "/m", fitALineArgs(5, 400)); // 27 batches an epoch on each of 3: a long job
  auto ends = runByHand(dir + "/m", dir + "/job", 3, "trainer.1", "paddle", "");
  for (int r : {0, 2}) {
    CAPTURE(r, ends[r].first, ends[r].second);
    std::string log = readFile(dir + "/job/trainer." + std::to_string(r) + ".log");
    CAPTURE(errorLines(log));
    CHECK(ends[r].first != 0);
    CHECK(ends[r].second < 10000);
    CHECK(std::regex_search(log, std::regex("ranks? ([0-9], )*1(, [0-9])* (is|are) gone")));
  }
}

TEST_CASE("collective trainers with different batch counts are refused before the first step",
          "[e2e][runtime][collective][errors]") {
  std::string dir = scratchDir("collective_uneven");
  makeModel(dir + "/m", fitALineArgs(1, 1)); // 404 rows: 135, 135 and 134 on 3 trainers
  std::string out =
      runFailing(binDir() + "/oar-launch --mode collective --worker-num=3 " + dir + "/m");
  CHECK_THAT(out, Contains("trainer 0 has 135 batches an epoch but trainer 2 has 134 batches an "
                           "epoch"));
  CHECK_THAT(out, !Contains("] step "));
  CHECK_THAT(runFailing(binDir() + "/oar-launch --mode collective --server-num=1 " + dir + "/m"),
             Contains("--mode collective runs no pservers"));
  // A trainer told it is in a collective job but not where trainer 0 is.
  CHECK_THAT(runFailing("PADDLE_TRAINING_ROLE=TRAINER PADDLE_TRAINER_ID=1 PADDLE_TRAINERS_NUM=2 " +
                        binDir() + "/oar-executor --mode collective --main " + dir +
                        "/m/main.pb --startup " + dir + "/m/startup.pb"),
             Contains("trainer 1: a collective trainer needs trainer 0's address"));
}

TEST_CASE("collective trainers placed by their MPI rank (mpirun's variables) meet at "
          "--rendezvous and train",
          "[e2e][runtime][collective][cluster]") {
  std::string dir = scratchDir("collective_mpi");
  makeModel(dir + "/m", fitALineArgs(10, 2));
  auto port = holdPort();
  handOver(*port);
  std::string common = binDir() + "/oar-executor --mode collective --num-threads=1 --main " + dir +
                       "/m/main.pb --startup " + dir + "/m/startup.pb --rendezvous " +
                       endpointOf(*port);
  // The variables Open MPI's mpirun sets in each rank; rank 0 takes the held port over.
  std::string out =
      run("(OAR_LISTEN_FD=" + std::to_string(port->fd()) +
          " OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 " + common + " > " + dir +
          "/rank0.log 2>&1 & OMPI_COMM_WORLD_RANK=1 "
          "OMPI_COMM_WORLD_SIZE=2 " +
          common + " > " + dir + "/rank1.log 2>&1; s=$?; wait $!; echo \"rank1 $s rank0 $?\")");
  CHECK_THAT(out, Contains("rank1 0 rank0 0"));
  CHECK_THAT(readFile(dir + "/rank0.log"), Contains("trainer 0: trained"));
  CHECK_THAT(readFile(dir + "/rank1.log"), Contains("trainer 1: trained"));
}

TEST_CASE("a collective job stops early on trainer 0's decision, every trainer at the same step, "
          "and keeps the best evaluation",
          "[e2e][runtime][collective][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("collective_early_stop");
  std::string data = f.dir + "/x.npy," + f.dir + "/y.npy";
  makeModel(dir + "/m",
            mnistMlpArgs(data, "--hidden=128,64 --optimizer=momentum --lr=0.2 --epochs=20"));
  std::string out = run(binDir() +
                        "/oar-launch --mode collective --worker-num=2 --eval-every=8 "
                        "--early-stop=2 --keep-best=loss --load " +
                        f.dir + "/init --save " + dir + "/s " + dir + "/m");
  CHECK_THAT(out, Contains("oar-launch: all 2 nodes finished"));
  std::smatch stopped;
  REQUIRE(std::regex_search(out, stopped,
                            std::regex(R"(stopped early after step (\d+): 2 evaluations)")));
  int steps = std::stoi(stopped[1]) + 1;
  REQUIRE(steps < 640); // 20 epochs of 32 steps
  CHECK_THAT(out, Contains("trainer 0: trained " + std::to_string(steps) + " steps"));
  CHECK_THAT(out, Contains("trainer 1: trained " + std::to_string(steps) + " steps"));
  std::smatch best;
  REQUIRE(std::regex_search(out, best, std::regex(R"(best loss ([0-9.]+) after step)")));
  std::string again = run(binDir() + "/oar-executor --main " + dir + "/m/main.pb --startup " + dir +
                          "/m/startup.pb --load " + dir + "/s/best --eval-only");
  CHECK_THAT(again, Contains("loss " + best[1].str()));
}

TEST_CASE("a model with batch norm and dropout saved by a collective job exports and serves its "
          "evaluation's scores",
          "[e2e][runtime][collective][toolkit]") {
  Fixture f = loadFixture("mnist_mlp_momentum");
  std::string dir = scratchDir("collective_dropout_export");
  std::string data = f.dir + "/x.npy," + f.dir + "/y.npy";
  makeModel(dir + "/m", mnistMlpArgs(data, "--hidden=64 --optimizer=adam --lr=0.003 "
                                           "--norm=batch --dropout=0.3"));
  std::string out = run(binDir() + "/oar-launch --mode collective --worker-num=2 --save " + dir +
                        "/s " + dir + "/m");
  CHECK_THAT(out, Contains("oar-launch: all 2 nodes finished"));
  // Trainer 0 saves the params only: the dropout's step counter is not among them, and the
  // export must not need it.
  run(binDir() + "/oar-export " + dir + "/m --load " + dir + "/s -o " + dir + "/e");
  run(binDir() + "/oar-predict " + dir + "/e --data " + data + " --format npy -o " + dir +
      "/scores.tsv");
  std::string scores = readFile(dir + "/scores.tsv");
  CHECK(std::count(scores.begin(), scores.end(), '\n') == 2048);
}
