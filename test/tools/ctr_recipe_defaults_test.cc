// What oar-model's CTR recipes decide for a user who gives only their data: the defaults printed
// and in --help, a given flag never replaced, the vocabulary sized to the data, shuffling on,
// a label named by value, and the Adagrad start the pservers' tables share.
#include "test/helpers/expect.h"
#include "test/helpers/job.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// A three-row click log with a YES/NO label; returns its path.
std::string tinyLog(const std::string &dir) {
  std::string path = dir + "/tiny.csv";
  writeFile(path, "clicked,user,price\nYES,u1,3.5\nNO,u2,10\nNO,u1,7.25\n");
  return path;
}

std::string model(const std::string &dir, const std::string &flags) {
  return binDir() + "/oar-model --model=wide_deep --format=csv --sparse=user --dense=price " +
         "--data=" + tinyLog(dir) + " " + flags + " -o " + dir + "/model --text";
}

} // namespace

TEST_CASE("oar-model's CTR recipe prints its settings, keeps a given --epsilon, sizes --vocab "
          "to the data, shuffles by default, and --help says what it changes",
          "[tools][ctr]") {
  std::string dir = scratchDir("ctr_recipe_defaults");
  std::string out = run(model(dir, "--label=clicked:positive=YES:negative=NO --epsilon=1e-8"));
  INFO(out);
  CHECK_THAT(out, Contains("oar-model: vocab 1024: about 2 distinct keys in 3 rows"));
  CHECK_THAT(out, Contains("dense price: standardize with mean 6.91666"));
  CHECK_THAT(out, Contains("  epsilon              1e-08\n"));
  CHECK_THAT(out, Contains("  lr                   0.02\n"));
  CHECK_THAT(out, Contains("  initial-accumulator  0\n"));
  CHECK_THAT(out, Contains("  shuffle              on\n"));
  CHECK_THAT(out, Contains("  hidden               400,400,400\n"));
  // The program holds what was printed: epsilon 1e-8 on every adagrad op, a 1024-row table.
  std::string main = readFile(dir + "/model/main.pbtxt");
  CHECK_THAT(main, Contains("f: 1e-08"));
  CHECK(main.find("f: 1e-06") == std::string::npos);
  CHECK_THAT(main, Contains("dims: [1024, 10]"));
  CHECK_THAT(main, Contains("shuffle: true"));

  CHECK_THAT(run(model(dir, "--label=clicked:positive=YES --shuffle=false --lr=0.05")),
             Contains("  shuffle              off\n"));
  CHECK_THAT(run(binDir() + "/oar-model --help"),
             Contains("--optimizer=adagrad --lr=0.02 --batch-size=1000 "
                      "--hidden=400,400,400 --shuffle (a bounded buffer)"));
  CHECK_THAT(runFailing(model(dir, "--label=clicked:positive=YES --optimizer=adam "
                                   "--initial-accumulator=0.1")),
             Contains("--initial-accumulator is adagrad's; --optimizer=adam has none"));
}

TEST_CASE("a YES/NO label named by value trains, and another value is refused by file and line",
          "[tools][ctr]") {
  std::string dir = scratchDir("ctr_label_by_value");
  run(model(dir, "--label=clicked:positive=YES:negative=NO --hidden=8"));
  std::string m = dir + "/model";
  std::string trained = run(binDir() + "/oar-executor --main " + m + "/main.pb --startup " + m +
                            "/startup.pb");
  CHECK_THAT(trained, Contains("trained 1 steps"));
  writeFile(dir + "/tiny.csv", "clicked,user,price\nYES,u1,3.5\nMAYBE,u2,10\n");
  CHECK_THAT(runFailing(binDir() + "/oar-executor --main " + m + "/main.pb --startup " + m +
                        "/startup.pb"),
             Contains("tiny.csv:3: label clicked is \"MAYBE\"; it must be YES (1) or NO (0)"));
}

TEST_CASE("a pserver's table starts each new row's Adagrad sum where the recipe's optimizer "
          "does (--initial-accumulator)",
          "[tools][ctr][transpiler]") {
  std::string dir = scratchDir("ctr_initial_accumulator");
  for (const char *value : {"0.1", "0.25"}) {
    run(model(dir, std::string("--label=clicked:positive=YES --initial-accumulator=") + value));
    std::string m = dir + "/model";
    run(binDir() + "/oar-transpile --main " + m + "/main.pb --startup " + m +
        "/startup.pb --pservers=127.0.0.1:1 --trainers=1 --text --quiet -o " + dir + "/t");
    std::string pserver = readFile(dir + "/t/pserver.0.pbtxt");
    size_t at = pserver.find("name: \"initial_accumulator\"");
    REQUIRE(at != std::string::npos);
    CHECK_THAT(pserver.substr(at, 60), Contains(std::string("f: ") + value));
  }
}

TEST_CASE("a CTR recipe with a learning-rate schedule schedules its dense params and keeps its "
          "distributed tables at the base rate, so a PS job of it runs",
          "[tools][ctr][e2e]") {
  std::string dir = scratchDir("ctr_dense_schedule");
  std::string out = run(model(dir, "--label=clicked:positive=YES --hidden=8 "
                                   "--lr-schedule=exponential --lr-decay-steps=10 "
                                   "--lr-decay-rate=0.5"));
  CHECK_THAT(out, Contains("the dense params only, the tables at the constant rate"));
  std::string main = readFile(dir + "/model/main.pbtxt");
  // Each dense param's update counts its steps (6 of the 8 updates); the two tables' (the
  // embedding and the wide part) do not.
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  CHECK(count(main, "type: \"adagrad\"") == 8);
  CHECK(count(main, "slot: \"Step\"") == 6);
  std::string job = run(binDir() + "/oar-launch --server-num=1 --worker-num=1 --mode=sync "
                                   "--timeout=120 " +
                        dir + "/model");
  CHECK_THAT(job, Contains("trained 1 steps"));
  // --local-tables: the tables train on the trainers, and the schedule reaches them too.
  out = run(model(dir, "--label=clicked:positive=YES --hidden=8 --local-tables "
                       "--lr-schedule=exponential --lr-decay-steps=10 --lr-decay-rate=0.5"));
  CHECK(out.find("the tables at the constant rate") == std::string::npos);
  CHECK(count(readFile(dir + "/model/main.pbtxt"), "slot: \"Step\"") == 8);
}
