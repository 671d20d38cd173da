// Schema feeds: csv, tsv, slot and libffm read by column name, and every check a bad file meets.
#include <fstream>

#include "api/recipes.h"
#include "feed/batch_source.h"
#include "feed/feature_key.h"
#include "feed/schema.h"
#include "test/helpers/click_log.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

proto::FeedSchema clickSchema() {
  return requireValue(schemaFromFlags("clicked", "price:log1p", "user,item,cat,hour:int"));
}

/// A wide_deep program whose train feed reads `files` as `format`.
ModelBuilder clickModel(const std::string &format, const std::vector<std::string> &files,
                        const proto::FeedSchema &schema, int64_t batch = 64) {
  RecipeSpec s;
  s.model = "wide_deep";
  s.format = format;
  s.schema = schema;
  s.data = files;
  applyCtrDefaults(s, {"shuffle"}); // rows in file order
  s.batchSize = batch;
  s.hidden = {8};
  s.vocab = 1 << 12;
  return requireValue(buildRecipe(s));
}

/// Every batch trainer `id` of `trainers` reads: each column's tensors, appended.
std::vector<std::vector<Tensor>> readAll(const proto::Program &main, int64_t id = 0,
                                         int64_t trainers = 1) {
  auto source = requireValue(openBatchSource(main.train_feed(), main.blocks(0), id, trainers));
  std::vector<std::vector<Tensor>> batches;
  std::vector<Tensor> batch;
  int64_t epoch;
  while (requireValue(source->next(batch, epoch))) {
    batches.emplace_back(); // copies: the source fills the same tensors again
    for (const Tensor &t : batch)
      batches.back().push_back(t.clone());
  }
  return batches;
}

bool sameBatches(const std::vector<std::vector<Tensor>> &a,
                 const std::vector<std::vector<Tensor>> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t c = 0; c < a[i].size(); ++c)
      if (a[i][c].bytes() != b[i][c].bytes() ||
          std::memcmp(a[i][c].raw(), b[i][c].raw(), a[i][c].bytes()) != 0)
        return false;
  return true;
}

/// The error reading `text` as a `format` file gives.
std::string readError(const std::string &format, const std::string &text,
                      proto::FeedSchema schema = clickSchema()) {
  std::string path = scratchDir("schema_feed_errors") + "/bad." + format;
  std::ofstream(path) << text;
  ModelBuilder m = clickModel(format, {path}, schema);
  auto source = openBatchSource(m.main().train_feed(), m.main().blocks(0));
  if (!source)
    return errorText(source.takeError());
  std::vector<Tensor> batch;
  int64_t epoch;
  for (;;) {
    auto more = (*source)->next(batch, epoch);
    if (!more)
      return errorText(more.takeError());
    if (!*more)
      return "";
  }
}

} // namespace

TEST_CASE("a schema comes from flags or a file, and a bad one is an error naming the entry",
          "[feed]") {
  proto::FeedSchema flags = clickSchema();
  CHECK(denseWidth(flags) == 1);
  CHECK(slotCount(flags) == 4);
  std::string file = scratchDir("schema_file") + "/clicks.schema";
  std::ofstream(file) << "# my click log\nlabel clicked\nsparse user\nsparse item\nsparse cat\n"
                         "sparse hour int\ndense price log1p   # skewed\n";
  CHECK(describeSchema(requireValue(readSchemaFile(file))) == describeSchema(flags));

  auto bucketized = requireValue(schemaFromFlags("y", "price:bucketize:1:10:100,age", "user"));
  CHECK(denseWidth(bucketized) == 1); // age; price became a slot after user
  CHECK(slotCount(bucketized) == 2);

  CHECK_THAT(errorText(schemaFromFlags("y", "price:sqrt", "user")),
             Contains("--dense: dense column price: \"sqrt\" with 0 argument(s) is no transform"));
  CHECK_THAT(errorText(schemaFromFlags("y", "price:standardize:3:0", "user")),
             Contains("standardize needs a positive std"));
  CHECK_THAT(errorText(schemaFromFlags("y", "price:bucketize:5:1", "user")),
             Contains("bucketize boundaries must ascend (5 then 1)"));
  CHECK_THAT(errorText(schemaFromFlags("y", "", "user,user")),
             Contains("column user is declared twice"));
  CHECK_THAT(errorText(schemaFromFlags("", "", "user")), Contains("names no label column"));
  std::ofstream(file) << "label clicked\nsparse user\nsprase item\n";
  CHECK_THAT(errorText(readSchemaFile(file)),
             Contains(file + ":3: \"sprase\" is no column kind"));
}

TEST_CASE("csv columns are found by name: another order, tsv and slot files give the same bits",
          "[feed]") {
  std::string dir = scratchDir("schema_orders");
  std::vector<ClickRow> rows = clickRows(500, 7);
  writeClickLog(rows, "csv", dir + "/a.csv");
  writeClickLog(rows, "csv", dir + "/b.csv", {"price", "extra", "clicked", "hour", "cat", "item",
                                              "user"}); // "extra" is ignored
  writeClickLog(rows, "tsv", dir + "/c.tsv");
  writeClickLog(rows, "slot", dir + "/d.slot");
  auto want = readAll(clickModel("csv", {dir + "/a.csv"}, clickSchema()).main());
  REQUIRE(want.size() == 8); // 500 rows in batches of 64
  CHECK(want[0][0].dim(0) == 64);
  CHECK(want[0][2].dim(1) == 4);
  CHECK(sameBatches(want, readAll(clickModel("csv", {dir + "/b.csv"}, clickSchema()).main())));
  CHECK(sameBatches(want, readAll(clickModel("tsv", {dir + "/c.tsv"}, clickSchema()).main())));
  CHECK(sameBatches(want, readAll(clickModel("slot", {dir + "/d.slot"}, clickSchema()).main())));
  // The values themselves: the label, log1p of the price, the key of (column, value).
  CHECK(want[0][0].data<float>()[3] == float(rows[3].clicked));
  CHECK(want[0][1].data<float>()[3] == float(std::log1p(std::stod(
                                           llvm::formatv("{0:f2}", rows[3].price).str()))));
  CHECK(uint64_t(want[0][2].data<int64_t>()[3 * 4]) == featureKey("user", rows[3].user));
  CHECK(uint64_t(want[0][2].data<int64_t>()[3 * 4 + 3]) ==
        featureKey("hour", std::to_string(rows[3].hour)));
}

TEST_CASE("quoted csv fields, gzip files, and trainers sharing lines or files", "[feed]") {
  std::string dir = scratchDir("schema_csv_shapes");
  std::ofstream(dir + "/quoted.csv")
      << "clicked,user,item,cat,hour,price\n1,\"u,1\",\"it \"\"9\"\"\",c3,014,\"2.5\"\n"
      << "0,u2,it8,,7,\n";
  auto batches = readAll(clickModel("csv", {dir + "/quoted.csv"}, clickSchema()).main());
  REQUIRE(batches.size() == 1);
  const int64_t *keys = batches[0][2].data<int64_t>();
  CHECK(uint64_t(keys[0]) == featureKey("user", "u,1"));
  CHECK(uint64_t(keys[1]) == featureKey("item", "it \"9\""));
  CHECK(uint64_t(keys[3]) == featureKey("hour", "14")); // an int column: 014 is 14
  CHECK(uint64_t(keys[4 + 2]) == featureKey("cat", ""));  // missing: a key of its own
  CHECK(batches[0][1].data<float>()[1] == 0.0f);          // a missing dense value is 0

  std::vector<ClickRow> rows = clickRows(300, 3);
  writeClickLog(rows, "csv", dir + "/all.csv");
  REQUIRE(std::system(("gzip -kf " + dir + "/all.csv").c_str()) == 0);
  auto plain = readAll(clickModel("csv", {dir + "/all.csv"}, clickSchema()).main());
  CHECK(sameBatches(plain, readAll(clickModel("csv", {dir + "/all.csv.gz"}, clickSchema()).main())));

  // Two trainers on one file: lines i mod 2 each, every row once, the header read by both.
  auto count = [](const std::vector<std::vector<Tensor>> &b) {
    int64_t n = 0;
    for (auto &batch : b)
      n += batch[0].dim(0);
    return n;
  };
  ModelBuilder one = clickModel("csv", {dir + "/all.csv"}, clickSchema());
  CHECK(count(readAll(one.main(), 0, 2)) == 150);
  CHECK(count(readAll(one.main(), 1, 2)) == 150);
  CHECK(readAll(one.main(), 1, 2)[0][0].data<float>()[0] == float(rows[1].clicked));
  // Several files: whole files i mod 2.
  writeClickLog({rows.begin(), rows.begin() + 100}, "csv", dir + "/p0.csv");
  writeClickLog({rows.begin() + 100, rows.end()}, "tsv", dir + "/p1.csv");
  ModelBuilder parts = clickModel("csv", {dir + "/p0.csv", dir + "/p1.csv"}, clickSchema());
  CHECK(count(readAll(parts.main(), 0, 2)) == 100);
  CHECK_THAT(errorText(openBatchSource(parts.main().train_feed(), parts.main().blocks(0), 0, 3)),
             Contains("names 2 files for 3 trainers"));
}

TEST_CASE("bad rows are one-line errors naming the file and line", "[feed][errors]") {
  const std::string header = "clicked,user,item,cat,hour,price\n";
  const std::string good = "1,u1,it1,c1,3,2.5\n";
  CHECK_THAT(readError("csv", header + good + "2,u1,it1,c1,3,2.5\n"),
             Contains("bad.csv:3: label clicked is 2; a click label must be 0 or 1"));
  CHECK_THAT(readError("csv", header + good + "1,u1,it1,c1,3,cheap\n"),
             Contains("bad.csv:3: column price is \"cheap\"; a dense column takes finite numbers"));
  CHECK_THAT(readError("csv", header + good + "1,u1,it1,c1,3\n"),
             Contains("bad.csv:3: 5 fields; the header has 6"));
  CHECK_THAT(readError("csv", header + good + "1,u1,it1,c1,3,2.5,9\n"),
             Contains("bad.csv:3: 7 fields; the header has 6"));
  CHECK_THAT(readError("csv", "clicked,user,item,category,hour,price\n" + good),
             Contains("bad.csv:1: the header has no column cat (it has clicked, user, item, "
                      "category, hour, price)"));
  CHECK_THAT(readError("csv", header + good + "1,u1,it1,c1,12.7,2.5\n"),
             Contains("bad.csv:3: column hour is \"12.7\"; its ids are integers"));
  CHECK_THAT(readError("csv", header + "1,\"u1,it1,c1,3,2.5\n"),
             Contains("bad.csv:2: a quoted field does not end on its line"));
  CHECK_THAT(readError("csv", ""), Contains("bad.csv: the file is empty"));
  CHECK_THAT(readError("slot", "clicked:1 user:u1 user:u2 item:i\n"),
             Contains("bad.slot:1: slot user has more than one value"));
  CHECK_THAT(readError("slot", "user:u1 item:i\n"), Contains("bad.slot:1: the line has no label"));
  CHECK_THAT(readError("slot", "clicked:1 user\n"), Contains("bad.slot:1: token \"user\" is not"));
  proto::FeedSchema ffm = requireValue(schemaFromFlags("label", "4:log1p", "0,1,2,3:int"));
  CHECK_THAT(readError("libffm", "1 0:5:1 4:0:2.5\n0 0:5\n", ffm),
             Contains("bad.libffm:2: token \"0:5\" is not field:index:value"));
  CHECK_THAT(readError("libffm", "0.5 0:5:1\n", ffm),
             Contains("bad.libffm:1: label label is 0.5; a click label must be 0 or 1"));
  // A gzip file and a header skipped on a file without one, in the positional csv reader.
  std::string dir = scratchDir("schema_feed_errors");
  RecipeSpec s;
  s.model = "linear", s.format = "tsv", s.data = {dir + "/x.tsv"};
  CHECK_THAT(errorText(buildRecipe(s)), Contains("the tsv feed finds its columns by name: it "
                                                 "needs a schema"));
}

TEST_CASE("linear and mlp read a schema's dense columns: classes are checked", "[feed]") {
  std::string dir = scratchDir("schema_dense");
  std::ofstream(dir + "/d.csv") << "a,kind,b\n1.5,2,3\n0.5,3,1\n";
  RecipeSpec s;
  s.model = "mlp", s.format = "csv", s.data = {dir + "/d.csv"}, s.hidden = {4};
  s.loss = "softmax_with_cross_entropy", s.out = 3;
  s.schema = requireValue(schemaFromFlags("kind", "a,b:log1p", ""));
  ModelBuilder m = requireValue(buildRecipe(s));
  auto source = requireValue(openBatchSource(m.main().train_feed(), m.main().blocks(0)));
  std::vector<Tensor> batch;
  int64_t epoch;
  CHECK_THAT(errorText(source->next(batch, epoch)),
             Contains("d.csv:3: label kind is 3; it must be a class index from 0 to 2"));
  s.schema = requireValue(schemaFromFlags("kind", "a", "b"));
  CHECK_THAT(errorText(buildRecipe(s)), Contains("--model=mlp reads dense columns only"));
}

TEST_CASE("multi-valued columns: csv cells split, slots named again, libsvm's features, pooled "
          "by sum or mean",
          "[feed]") {
  std::string dir = scratchDir("schema_multi");
  auto schema = requireValue(schemaFromFlags("clicked", "price", "tags:multi:3:mean,user"));
  CHECK(keyWidth(schema) == 4);
  std::ofstream(dir + "/t.csv") << "clicked,tags,price,user\n1,a|b|c,2,u1\n0,,1,u2\n1,d,3,u3\n";
  auto batches = readAll(clickModel("csv", {dir + "/t.csv"}, schema).main());
  REQUIRE(batches.size() == 1);
  REQUIRE(batches[0].size() == 4); // label, dense, sparse, weights
  const int64_t *keys = batches[0][2].data<int64_t>();
  const float *weights = batches[0][3].data<float>();
  // user (single-valued) first, then tags' 3 keys.
  CHECK(uint64_t(keys[0]) == featureKey("user", "u1"));
  CHECK(uint64_t(keys[1]) == featureKey("tags", "a"));
  CHECK(uint64_t(keys[3]) == featureKey("tags", "c"));
  CHECK(std::vector<float>(weights, weights + 4) == std::vector<float>{1, 1 / 3.f, 1 / 3.f, 1 / 3.f});
  CHECK(std::vector<float>(weights + 4, weights + 8) == std::vector<float>{1, 0, 0, 0}); // none
  CHECK(std::vector<float>(weights + 8, weights + 12) == std::vector<float>{1, 1, 0, 0});
  CHECK(uint64_t(keys[6]) == featureKey("tags", "")); // padding: the missing key, weighed 0
  // The same rows as slot lines, tags named once a value.
  std::ofstream(dir + "/t.slot") << "clicked:1 tags:a price:2 tags:b user:u1 tags:c\n"
                                 << "clicked:0 price:1 user:u2\nclicked:1 tags:d price:3 user:u3\n";
  auto slots = readAll(clickModel("slot", {dir + "/t.slot"}, schema).main());
  CHECK(sameBatches(batches, slots));
  CHECK_THAT(readError("csv", "clicked,tags,price,user\n1,a|b|c|d,2,u1\n", schema),
             Contains("bad.csv:2: column tags has more than 3 values; it holds at most 3"));
  // libsvm: 9 is a dense column, every other index a feature of the bag.
  auto svm = requireValue(schemaFromFlags("label", "9", "features:multi:3"));
  std::ofstream(dir + "/t.svm") << "1 5:1 7:1 9:2.5\n0 9:1\n";
  auto bag = readAll(clickModel("libsvm", {dir + "/t.svm"}, svm).main());
  REQUIRE(bag.size() == 1);
  CHECK(bag[0][1].data<float>()[0] == 2.5f);
  CHECK(uint64_t(bag[0][2].data<int64_t>()[1]) == featureKey("features", "7"));
  CHECK(std::vector<float>(bag[0][3].data<float>(), bag[0][3].data<float>() + 3) ==
        std::vector<float>{1, 1, 0});
  CHECK_THAT(readError("libsvm", "1 5:1 6:1 7:1 8:1\n", svm),
             Contains("bad.libsvm:1: column features has more than 3 values"));
  CHECK_THAT(readError("libsvm", "1 5:1\n",
                       requireValue(schemaFromFlags("label", "", "user,features:multi:3"))),
             Contains("declare exactly one (as --sparse=features:multi:64), not 2"));
}
