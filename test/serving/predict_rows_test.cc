// Raw rows in, scores out: a served model applies its schema's transforms (standardized and
// bucketized with the statistics computed at training), hashed ids and crosses as training did,
// so Predictor::predictRows and oar-predict on rows without a label give the job's own scores.
#include <cmath>

#include "serving/predictor.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "llvm/ADT/StringExtras.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// A csv file's header and rows, each split at commas (oar-gen-ctr writes no quotes).
struct CsvRows {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

CsvRows readCsvRows(const std::string &path) {
  CsvRows csv;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  std::string text = readFile(path);
  llvm::StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::SmallVector<llvm::StringRef, 16> cells;
    lines[i].split(cells, ',');
    std::vector<std::string> row(cells.begin(), cells.end());
    if (i == 0)
      csv.header = std::move(row);
    else
      csv.rows.push_back(std::move(row));
  }
  return csv;
}

/// The same rows without column `drop`.
CsvRows without(const CsvRows &csv, const std::string &drop) {
  size_t at = std::find(csv.header.begin(), csv.header.end(), drop) - csv.header.begin();
  REQUIRE(at < csv.header.size());
  CsvRows out = csv;
  out.header.erase(out.header.begin() + at);
  for (auto &row : out.rows)
    row.erase(row.begin() + at);
  return out;
}

void writeCsv(const std::string &path, const CsvRows &csv) {
  std::string text = llvm::join(csv.header, ",") + "\n";
  for (const auto &row : csv.rows)
    text += llvm::join(row, ",") + "\n";
  writeFile(path, text);
}

double largestDifference(const std::vector<float> &got, const std::vector<float> &want) {
  REQUIRE(got.size() == want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(1.0 * got[i] - want[i]));
  return worst;
}

} // namespace

TEST_CASE("predictRows and oar-predict on rows without a label give the job's own scores, "
          "with the schema's transforms, auto statistics and crosses applied",
          "[e2e][serving]") {
  std::string dir = scratchDir("predict_rows");
  run(binDir() + "/oar-gen-ctr --layout=clicklog --train-lines=20000 --test-lines=1500 " +
      "--users=3000 --items=2000 -o " + dir + "/data");
  // price plain (the recipe standardizes it from the data), hour bucketized at the data's
  // quantiles, and crosses of a bucketized column and of a multi-valued one (into the tower too).
  std::string model = dir + "/model";
  run(binDir() + "/oar-model --model=wide_deep --format=csv --data=" + dir +
      "/data/train.csv --test-data=" + dir + "/data/test.csv --label=clicked " +
      "--sparse=user,item,cat,device,recent:multi:8 --dense=price,hour:bucketize:auto:6 " +
      "--cross=cat*hour,recent*cat:deep --hidden=32,16 --epochs=1 -o " + model);
  run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
      "/startup.pb --save " + dir + "/save --test-scores " + dir + "/job.tsv");
  run(binDir() + "/oar-export " + model + " --load " + dir + "/save -o " + dir + "/export");
  std::vector<float> job = readScores(dir + "/job.tsv");
  REQUIRE(job.size() == 1500);

  auto predictor = requireValue(Predictor::load(dir + "/export"));
  CsvRows test = without(readCsvRows(dir + "/data/test.csv"), "clicked");
  REQUIRE(test.rows.size() == 1500);
  std::vector<float> served;
  for (size_t begin = 0; begin < test.rows.size(); begin += 400) {
    size_t end = std::min(test.rows.size(), begin + 400);
    std::vector<std::vector<std::string>> batch(test.rows.begin() + begin,
                                                test.rows.begin() + end);
    std::vector<Tensor> out = requireValue(predictor->predictRows(test.header, batch));
    REQUIRE(out[0].dim(0) == static_cast<int64_t>(end - begin));
    for (int64_t r = 0; r < out[0].dim(0); ++r)
      served.push_back(out[0].data<float>()[r]);
  }
  double worst = largestDifference(served, job);
  INFO("largest difference of predictRows' scores from the job's: " << worst);
  CHECK(worst <= 1e-6);

  // Columns in another order, the label given too: the same scores.
  CsvRows all = readCsvRows(dir + "/data/test.csv");
  std::reverse(all.header.begin(), all.header.end());
  for (auto &row : all.rows)
    std::reverse(row.begin(), row.end());
  std::vector<std::vector<std::string>> first(all.rows.begin(), all.rows.begin() + 10);
  std::vector<Tensor> reordered = requireValue(predictor->predictRows(all.header, first));
  for (int r = 0; r < 10; ++r)
    CHECK(reordered[0].data<float>()[r] == served[r]);

  // A column the model does not know, a cross named as a column, a bad cell: refused by name.
  std::vector<std::vector<std::string>> one = {{"12.5"}};
  CHECK_THAT(errorText(predictor->predictRows({"nope"}, one)),
             Contains("the model has no column nope (its columns: clicked, "));
  CHECK_THAT(errorText(predictor->predictRows({"cat*hour"}, one)),
             Contains("a cross is computed from its columns"));
  CHECK_THAT(errorText(predictor->predictRows({"price"}, {{"cheap"}})),
             Contains("predictRows: row 0, column price: "));
  CHECK_THAT(errorText(predictor->predictRows({"price", "cat"}, one)),
             Contains("row 0 has 1 cells for 2 columns"));

  // oar-predict scores a file that has no label column.
  writeCsv(dir + "/nolabel.csv", test);
  run(binDir() + "/oar-predict " + dir + "/export --data " + dir + "/nolabel.csv -o " + dir +
      "/predicted.tsv");
  double file = largestDifference(readScores(dir + "/predicted.tsv"), job);
  INFO("largest difference of oar-predict's scores from the job's: " << file);
  CHECK(file <= 1e-6);
}
