// Checkpoints that move in every direction: one machine <-> N pservers <-> M pservers, dense <->
// table form, and a one-line error for every piece a load finds missing.
#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/table_files.h"
#include "executor/npy.h"
#include "executor/save_set.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// "test: N rows, loss L, auc A" as (loss, auc).
std::pair<double, double> lossAndAuc(const std::string &output) {
  std::string line = testLine(output);
  size_t loss = line.find("loss "), auc = line.find(", auc ");
  REQUIRE(loss != std::string::npos);
  REQUIRE(auc != std::string::npos);
  return {std::stod(line.substr(loss + 5)), std::stod(line.substr(auc + 6))};
}

void checkSameModel(const std::string &saved, const std::string &loaded) {
  auto [lossA, aucA] = lossAndAuc(saved);
  auto [lossB, aucB] = lossAndAuc(loaded);
  INFO("saved: " << testLine(saved) << "\nloaded: " << testLine(loaded));
  CHECK(std::abs(aucA - aucB) <= 1e-6);
  CHECK(std::abs(lossA - lossB) <= 1e-6);
}

std::string ctrModel(const std::string &dir, const std::string &flags = "",
                     const std::string &name = "model") {
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=64,32 " +
      "--batch-size=500 " + flags + " -o " + dir + "/" + name);
  return dir + "/" + name;
}

std::string single(const std::string &model) {
  return binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model + "/startup.pb";
}

std::string launch(const std::string &model, const std::string &servers, const std::string &args,
                   const std::string &nodeFlags = "") {
  return binDir() + "/oar-launch --server-num=" + servers +
         " --worker-num=2 --mode=sync --timeout=300 " + args + " " + model +
         (nodeFlags.empty() ? "" : " -- " + nodeFlags);
}

} // namespace

TEST_CASE("a one-machine save evaluates the same in a 2x2 job, and a 2-pserver save on one "
          "machine",
          "[e2e][checkpoint]") {
  std::string dir = scratchDir("load_everywhere");
  std::string model = ctrModel(dir);
  // One machine -> 2 pservers: its dense tables become the pservers' rows.
  std::string trained = run(single(model) + " --save " + dir + "/one");
  std::string onPservers = run(launch(model, "2", "--load " + dir + "/one", "--eval-only"));
  CHECK_THAT(onPservers, Contains("table rows from the save " + dir + "/one"));
  checkSameModel(trained, onPservers);
  // Training goes on from it with the optimizer's state: the tables' rows take theirs too.
  std::string goesOn = run(launch(model, "2", "--load " + dir + "/one"));
  CHECK_THAT(goesOn, !Contains("optimizer starts fresh"));
  // 2 pservers -> one machine: the tables' parts fill the dense tables, the blocks the params.
  std::string distributed = run(launch(model, "2", "--save " + dir + "/two"));
  std::string onOne = run(single(model) + " --load " + dir + "/two --eval-only");
  CHECK_THAT(onOne, Contains("from the save of 2 pserver(s) in " + dir + "/two"));
  checkSameModel(distributed, onOne);
  // ... and training goes on there with the tables' optimizer state in the dense moments.
  CHECK_THAT(run(single(model) + " --load " + dir + "/two"), !Contains("optimizer starts fresh"));
  // Tables on the pservers -> the same tables dense on the pservers (--local-tables): each
  // pserver's blocks of them come from the rows of their key range, with their state.
  std::string local = ctrModel(dir, "--local-tables", "local");
  checkSameModel(distributed, run(launch(local, "2", "--load " + dir + "/two", "--eval-only")));
  CHECK_THAT(run(launch(local, "2", "--load " + dir + "/two")),
             !Contains("optimizer starts fresh"));
  // 2 pservers -> 3, and a checkpoint directory of 2 pservers -> one machine.
  checkSameModel(distributed, run(launch(model, "3", "--load " + dir + "/two", "--eval-only")));
  run(launch(model, "2", "", "--checkpoint-dir " + dir + "/ckpt --checkpoint-every 7"));
  std::string fromCheckpoint = run(single(model) + " --load " + dir + "/ckpt --eval-only");
  CHECK_THAT(fromCheckpoint, Contains("checkpoint step 40 of 2 pserver(s)"));
  checkSameModel(distributed, fromCheckpoint);
}

TEST_CASE("a checkpoint step picked by --load DIR --step N: any step of a 2-pserver checkpoint directory, on one "
          "machine, on 2 pservers and for an export",
          "[e2e][checkpoint]") {
  std::string dir = scratchDir("load_step");
  std::string model = ctrModel(dir);
  run(launch(model, "2", "", "--checkpoint-dir " + dir + "/ckpt --checkpoint-every 10"));
  std::string newest = run(single(model) + " --load " + dir + "/ckpt --eval-only");
  CHECK_THAT(newest, Contains("checkpoint step 40 of 2 pserver(s)"));
  std::string older = run(single(model) + " --load " + dir + "/ckpt --step 20 --eval-only");
  CHECK_THAT(older, Contains("checkpoint step 20 of 2 pserver(s)"));
  CHECK(testLine(older) != testLine(newest)); // another step, another model
  checkSameModel(older, run(launch(model, "2", "--load " + dir + "/ckpt --step 20",
                                   "--eval-only")));
  run(binDir() + "/oar-export " + model + " --load " + dir + "/ckpt --step 20 -o " + dir +
      "/export20");
  checkSameModel(older, run(single(model) + " --load " + dir + "/export20 --eval-only"));
  // A step it does not hold, and --step where there are no steps, are one-line errors.
  CHECK_THAT(errorLines(runFailing(single(model) + " --load " + dir + "/ckpt --step 25 "
                                   "--eval-only")),
             Contains("pserver.0 has no checkpoint step 25 (it has 40, 30 and 20)"));
  CHECK_THAT(errorLines(runFailing(single(model) + " --load " + dir + "/export20 --step 20 "
                                   "--eval-only")),
             Contains("this is an export, which has none"));
  CHECK_THAT(errorLines(runFailing(single(model) + " --step 20 --eval-only")),
             Contains("--step 20 picks a checkpoint step of --load DIR"));
}

TEST_CASE("every piece a load finds missing is a one-line error naming it and the checkpoint",
          "[e2e][checkpoint][errors]") {
  std::string dir = scratchDir("load_missing");
  std::string model = ctrModel(dir);
  run(single(model) + " --save " + dir + "/one");
  run(launch(model, "2", "--save " + dir + "/two"));
  auto copy = [&](const std::string &from, const std::string &to) {
    run("rm -rf " + to + " && cp -r " + from + " " + to);
    return to;
  };
  auto oneError = [](const std::string &out, const std::string &want) {
    std::string errors = errorLines(out);
    INFO(out);
    CHECK_THAT(errors, Contains(want));
    CHECK(errors.find('\n') == std::string::npos);
  };

  // A param no form of the checkpoint holds.
  std::string noParam = copy(dir + "/one", dir + "/no_param");
  llvm::sys::fs::remove(noParam + "/fc_1.w_0.npy");
  oneError(runFailing(single(model) + " --load " + noParam + " --eval-only"),
           "the save " + noParam + " holds nothing for parameter fc_1.w_0");
  oneError(
      runFailing(binDir() + "/oar-export " + model + " --load " + noParam + " -o " + dir + "/x"),
      "holds nothing for fc_1.w_0");

  // A table neither as parts nor dense: the pservers say so.
  std::string noTable = copy(dir + "/two", dir + "/no_table");
  run("rm -rf " + noTable + "/tables/embedding_1.w_0");
  std::string out = runFailing(launch(model, "2", "--load " + noTable, "--eval-only"));
  CHECK_THAT(out, Contains("holds nothing for table embedding_1.w_0"));
  oneError(
      runFailing(binDir() + "/oar-export " + model + " --load " + noTable + " -o " + dir + "/x"),
      "holds nothing for table embedding_1.w_0");
  oneError(runFailing(single(model) + " --load " + noTable + " --eval-only"),
           "holds nothing for parameter embedding_1.w_0");

  // A part of a table lost, or parts of two saves mixed.
  std::string noPart = copy(dir + "/two", dir + "/no_part");
  run("rm " + noPart + "/tables/embedding_0.w_0/part.1-of-2.*");
  oneError(runFailing(single(model) + " --load " + noPart + " --eval-only"),
           "table embedding_0.w_0 misses part 1 of 2");
  std::string mixed = copy(dir + "/two", dir + "/mixed");
  run("cp " + mixed + "/tables/embedding_0.w_0/part.0-of-2.keys.npy " + mixed +
      "/tables/embedding_0.w_0/part.0-of-3.keys.npy");
  oneError(runFailing(single(model) + " --load " + mixed + " --eval-only"),
           "holds the rows of saves by 2 pserver counts");

  // Optimizer state: all of it or none, when training goes on.
  std::string partState = copy(dir + "/one", dir + "/part_state");
  llvm::sys::fs::remove(partState + "/fc_0.w_0_moment_0.npy");
  oneError(runFailing(single(model) + " --load " + partState + " --epochs 1"),
           "none for fc_0.w_0_moment_0");
  run(single(model) + " --load " + partState + " --eval-only"); // evaluating needs none

  // Shrinking a table that one machine trained dense: no push counts to shrink by.
  oneError(runFailing(binDir() + "/oar-export " + model + " --load " + dir + "/one -o " + dir +
                      "/x --min-pushes 2"),
           "holds no push counts for table");
  // Checkpoints where nothing trains.
  oneError(runFailing(single(model) + " --load " + dir + "/one --eval-only --checkpoint-dir " +
                      dir + "/c"),
           "--checkpoint-dir checkpoints training; --eval-only trains nothing");
}

TEST_CASE("a table's parts and description read back, and a lost part is named", "[checkpoint]") {
  std::string dir = scratchDir("table_parts") + "/tables/t";
  llvm::sys::fs::create_directories(dir);
  TableInfo info;
  info.name = "t", info.width = 2, info.optimizer = "adagrad", info.step = 17;
  info.init = {"uniform", -0.05f, 0.05f, 7, "t"};
  auto parsed = requireValue(TableInfo::parse(info.text(), "x"));
  CHECK(parsed.text() == info.text());
  CHECK_THAT(errorText(TableInfo::parse("oar-table 1\nname t\n", "f.txt")),
             Contains("f.txt: no \"optimizer\" line"));
  for (int64_t part = 0; part < 2; ++part) {
    SaveSet files(dir);
    TableRows rows{Tensor::fromVector<int64_t>({2}, {part * 10 + 1, part * 10 + 3}),
                   Tensor::fromVector<float>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}),
                   Tensor::fromVector<int64_t>({2, 2}, {1, 0, 2, 5})};
    REQUIRE_OK(writeTablePart(info, rows, tablePartPrefix(dir, part, 2), files));
    REQUIRE_OK(files.commit());
  }
  CheckpointReader ckpt = requireValue(CheckpointReader::open(dir + "/../.."));
  CHECK(ckpt.tableNames() == std::vector<std::string>{"t"});
  auto parts = requireValue(ckpt.table("t"));
  REQUIRE(parts);
  REQUIRE(parts->size() == 2);
  TablePart second = requireValue(readTablePart((*parts)[1]));
  CHECK(second.rows.keys.toVector<int64_t>() == std::vector<int64_t>{11, 13});
  CHECK(second.info->step == 17);
  llvm::sys::fs::remove(dir + "/part.1-of-2.keys.npy");
  CheckpointReader lost = requireValue(CheckpointReader::open(dir + "/../.."));
  CHECK_THAT(errorText(lost.table("t")), Contains("table t misses part 1 of 2"));
}

TEST_CASE("a var is put together from the pservers' blocks of it, in row order", "[checkpoint]") {
  std::string dir = scratchDir("pserver_blocks");
  for (int i = 0; i < 2; ++i)
    llvm::sys::fs::create_directories(dir + "/pserver." + std::to_string(i));
  // pserver 1 holds rows 0-1 of w, pserver 0 rows 2-4 and a copy of the beta power.
  writeFile(dir + "/pserver.0/BLOCKS", "oar-blocks 1\nsliced w.block1 w 2\ncopy b.block1 b\n");
  writeFile(dir + "/pserver.1/BLOCKS", "oar-blocks 1\nsliced w.block0 w 0\n");
  REQUIRE_OK(writeNpy(dir + "/pserver.0/w.block1.npy",
                      Tensor::fromVector<float>({3, 2}, {4, 5, 6, 7, 8, 9})));
  REQUIRE_OK(writeNpy(dir + "/pserver.0/b.block1.npy", Tensor::fromVector<float>({1}, {0.5f})));
  REQUIRE_OK(
      writeNpy(dir + "/pserver.1/w.block0.npy", Tensor::fromVector<float>({2, 2}, {0, 1, 2, 3})));
  CheckpointReader ckpt = requireValue(CheckpointReader::open(dir));
  auto w = requireValue(ckpt.dense("w"));
  REQUIRE(w);
  CHECK(w->toVector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(requireValue(ckpt.dense("b"))->toVector<float>() == std::vector<float>{0.5f});
  CHECK_FALSE(requireValue(ckpt.dense("elsewhere")));
  // A block that leaves a gap is named.
  writeFile(dir + "/pserver.1/BLOCKS", "oar-blocks 1\nsliced w.block0 w 1\n");
  CheckpointReader gap = requireValue(CheckpointReader::open(dir));
  CHECK_THAT(errorText(gap.dense("w")), Contains("do not fit together"));
  writeFile(dir + "/pserver.1/BLOCKS", "oar-blocks 1\nsliced w.block0 w\n");
  CHECK_THAT(errorText(CheckpointReader::open(dir)), Contains("BLOCKS:2: \"sliced w.block0 w\""));
}

TEST_CASE("float16 values round to nearest even and read back widened", "[checkpoint]") {
  struct Case {
    float in, out;
  } cases[] = {{1.0f, 1.0f},
               {-2.5f, -2.5f},
               {0.1f, 0.0999755859375f},
               {65504.0f, 65504.0f},
               {65520.0f, INFINITY},
               {1.0f + 1.0f / 2048, 1.0f},                       // a tie: to the even neighbour
               {1.0f + 3.0f / 2048, 1.0f + 2.0f / 1024},         // a tie: up to even
               {5.960464477539063e-08f, 5.960464477539063e-08f}, // the smallest subnormal
               {2.0e-08f, 0.0f}};
  std::vector<float> in, want;
  for (const Case &c : cases) {
    INFO(c.in);
    CHECK(halfBitsToFloat(floatToHalf(c.in)) == c.out);
    in.push_back(c.in), want.push_back(c.out);
  }
  std::string dir = scratchDir("f16");
  SaveSet files(dir);
  Tensor t = Tensor::fromVector<float>({static_cast<int64_t>(in.size())}, in);
  REQUIRE_OK(files.add(dir + "/v.npy", t, /*asF16=*/true));
  REQUIRE_OK(files.commit());
  CHECK(readFile(dir + "/v.npy").find("'descr': '<f2'") != std::string::npos);
  CHECK(requireValue(readNpy(dir + "/v.npy")).toVector<float>() == want);
}
