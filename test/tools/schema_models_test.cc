// oar-model's CTR recipes on a click log of one's own (string ids, an hour, a price): csv, tsv,
// slot, libffm and Criteo's layout of the same rows, on one machine and as a 2x2 async job.
#include "test/helpers/click_log.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// The acceptance's size: at 60,000 rows, Criteo's layout (22 empty slots, 12 empty dense
/// features, the price in cents) still trails the named columns' AUC by 0.009.
constexpr int64_t kTrainRows = 200000;

/// The click log's train and test rows in `format` under `dir`; returns the model's directory.
std::string clickModel(const std::string &dir, const std::string &format,
                       const std::string &flags = "", std::vector<std::string> order = {},
                       std::string columns = "") {
  if (columns.empty() && format != "criteo")
    columns = clickLogColumns(format);
  std::string ext = format == "criteo" ? "txt" : format;
  writeClickLog(clickRows(kTrainRows, 1), format, dir + "/train." + ext, order);
  writeClickLog(clickRows(10000, 2), format, dir + "/test." + ext, order);
  std::string model = dir + "/model_" + format;
  run(binDir() + "/oar-model --model=wide_deep --format=" + format + " " +
      columns + " --data=" + dir + "/train." + ext +
      " --test-data=" + dir + "/test." + ext + " --vocab=65536 --hidden=64,32 --batch-size=500 " +
      flags + " -o " + model);
  return model;
}

/// One thread: the same batches then give the same sums to the bit (with more, a loaded machine
/// may split a GEMM's sums differently: seen, losses 1.4e-5 apart).
std::string single(const std::string &model, const std::string &args = "") {
  return binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
         "/startup.pb --num-threads 1 " + args;
}

} // namespace

TEST_CASE("wide_deep trains on one's own click log: csv, tsv and slot files to the same model, "
          "libffm, libsvm and Criteo's layout to the same AUC",
          "[tools][ctr][feed]") {
  std::string dir = scratchDir("schema_models");
  std::string csv = testLine(run(single(clickModel(dir, "csv"))));
  double auc = aucOf(csv);
  INFO("csv: " << csv);
  CHECK(auc > 0.70);
  // Columns found by name: another order (and an extra column), tsv and slot: the same keys and
  // batches (to the bit: schema_feed_test.cc), so the same training and the same test line.
  auto same = [&](const std::string &line) {
    CHECK(line.substr(line.find("test:")) == csv.substr(csv.find("test:")));
  };
  std::string shuffled = dir + "/shuffled";
  run("mkdir -p " + shuffled);
  same(testLine(run(single(
      clickModel(shuffled, "csv", "", {"price", "hour", "clicked", "cat", "user", "item"})))));
  same(testLine(run(single(clickModel(dir, "tsv")))));
  same(testLine(run(single(clickModel(dir, "slot")))));
  // Other keys (fields by number; Criteo's slots, the price in cents): the same AUC.
  double ffm = aucOf(run(single(clickModel(dir, "libffm"))));
  double criteo = aucOf(run(single(clickModel(dir, "criteo"))));
  // libsvm: the four ids as one bag of features, pooled into one slot.
  double svm = aucOf(run(single(clickModel(dir, "libsvm"))));
  INFO("libffm auc " << ffm << ", criteo auc " << criteo << ", libsvm auc " << svm);
  CHECK(std::abs(ffm - auc) < 0.002);
  CHECK(std::abs(criteo - auc) < 0.002);
  CHECK(std::abs(svm - auc) < 0.002);
}

TEST_CASE("a csv click log trains as a 2x2 async job, from one file or gzip parts split across "
          "the trainers, and a libsvm one with its features averaged",
          "[tools][ctr][feed][e2e]") {
  std::string dir = scratchDir("schema_async");
  std::string model = clickModel(dir, "csv");
  double one = aucOf(run(single(model)));
  std::string launch = binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=async "
                                  "--timeout=300 ";
  double async = aucOf(run(launch + model));
  INFO("one machine " << one << ", async " << async);
  CHECK(async > one - 0.02); // async runs differ by about 0.005 from one to the next
  // Two gzip files: each trainer reads one whole.
  std::vector<ClickRow> rows = clickRows(kTrainRows, 1);
  writeClickLog({rows.begin(), rows.begin() + kTrainRows / 2}, "csv", dir + "/part0.csv");
  writeClickLog({rows.begin() + kTrainRows / 2, rows.end()}, "csv", dir + "/part1.csv");
  run("gzip -f " + dir + "/part0.csv " + dir + "/part1.csv");
  std::string out =
      run(launch + "--data " + dir + "/part0.csv.gz," + dir + "/part1.csv.gz " + model);
  CHECK(aucOf(out) > one - 0.02);
  // libsvm's bag of features, averaged (weights 1/count) on the pservers' tables.
  std::string svmDir = dir + "/svm";
  run("mkdir -p " + svmDir);
  std::string svm =
      clickModel(svmDir, "libsvm", "", {}, "--sparse=features:multi:4:mean --dense=9999:log1p");
  CHECK(aucOf(run(launch + svm)) > one - 0.02);
}
