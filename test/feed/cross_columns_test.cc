// Crossed columns, labels given by value and auto statistics in a schema: what the flags and
// files accept and refuse, the keys the feed gives a cross, and that the feature_cross op gives
// the same keys from its columns' keys.
#include <fstream>

#include "executor/executor.h"
#include "feed/feature_key.h"
#include "feed/line_format.h"
#include "feed/schema.h"
#include "feed/schema_statistics.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

proto::FeedSchema logSchema() {
  return requireValue(schemaFromFlags("clicked:positive=YES:negative=NO", "price",
                                      "cat,hour:int,recent:multi:3:mean",
                                      "cat*hour,recent*cat:deep"));
}

/// Rows of csv `lines` (a header first) read with `schema`.
FeedRows readCsv(const proto::FeedSchema &schema, const std::vector<std::string> &lines) {
  SchemaColumns columns = requireValue(SchemaColumns::make(schema));
  auto format = requireValue(makeLineFormat("csv", columns));
  REQUIRE_OK(format->readHeader(lines[0]));
  FeedRows rows(columns.denseWidth(), columns.slots(), columns.weighted());
  for (size_t i = 1; i < lines.size(); ++i)
    REQUIRE_OK(format->parse(lines[i], rows, rows.add()));
  return rows;
}

} // namespace

TEST_CASE("a cross's keys are its columns' keys hashed together, one per value of a "
          "multi-valued column",
          "[feed][schema]") {
  proto::FeedSchema schema = logSchema();
  // Keys: cat, hour, recent x3, cat*hour, recent*cat x3.
  CHECK(keyWidth(schema) == 9);
  CHECK(slotCount(schema) == 5);
  FeedRows rows = readCsv(schema, {"clicked,price,cat,hour,recent", "YES,1.5,a,3,a|b",
                                   "NO,2,b,4,", "YES,,a,3,c"});
  CHECK(rows.label(0) == 1);
  CHECK(rows.label(1) == 0);
  uint64_t catA = featureKey("cat", "a"), hour3 = integerKeyFrom(columnHash("hour"), 3);
  const uint64_t *k = rows.keys(0);
  CHECK(k[0] == catA);
  CHECK(k[1] == hour3);
  CHECK(k[5] == crossKeyFrom(columnHash("cat*hour"), {catA, hour3}));
  CHECK(k[6] == crossKeyFrom(columnHash("recent*cat"), {featureKey("recent", "a"), catA}));
  CHECK(k[7] == crossKeyFrom(columnHash("recent*cat"), {featureKey("recent", "b"), catA}));
  CHECK(k[8] == featureKey("recent*cat", "")); // padding, weighed 0
  CHECK(rows.weights(0)[6] == 0.5f); // a mean over two values, as recent's
  CHECK(rows.weights(0)[8] == 0.0f);
  CHECK(rows.keys(2)[5] == k[5]); // the same cat and hour, the same cross key
  CHECK(k[5] != crossKeyFrom(columnHash("hour*cat"), {hour3, catA}));
  for (int i = 6; i < 9; ++i) // no values: the cross has none either
    CHECK(rows.weights(1)[i] == 0.0f);

  // The op gives the feed's keys from the columns' keys.
  Scope scope;
  scope.get("recent") = Tensor::fromVector<int64_t>(
      {1, 3}, {int64_t(k[2]), int64_t(k[3]), int64_t(k[4])});
  scope.get("cat") = Tensor::fromVector<int64_t>({1, 1}, {int64_t(catA)});
  REQUIRE_OK(Executor().runOp(makeOp("feature_cross", {{"X", {"recent", "cat"}}},
                                     {{"Out", {"cross"}}}, {{"column", std::string("recent*cat")}}),
                              scope, "t"));
  const Tensor &cross = scope.get("cross");
  REQUIRE(cross.dims() == llvm::ArrayRef<int64_t>({1, 3}));
  CHECK(uint64_t(cross.data<int64_t>()[0]) == k[6]);
  CHECK(uint64_t(cross.data<int64_t>()[1]) == k[7]);
}

TEST_CASE("crosses, labels by value and auto statistics refuse what they cannot read",
          "[feed][schema]") {
  auto error = [](const char *label, const char *dense, const char *sparse, const char *cross) {
    return errorText(schemaFromFlags(label, dense, sparse, cross).takeError());
  };
  CHECK_THAT(error("y", "price", "cat", "cat*price"),
             Contains("cross cat*price: price is no sparse or bucketized column"));
  CHECK_THAT(error("y", "", "a:multi:2,b:multi:3", "a*b"),
             Contains("crosses 2 multi-valued columns; at most one may be"));
  CHECK_THAT(error("y", "", "a,b", "a*"), Contains("names no columns to cross"));
  CHECK_THAT(error("y", "", "a,b", "a*b,a*b"), Contains("cross a*b is declared twice"));
  CHECK_THAT(error("y", "", "a,b", "a*b:wide"), Contains("\"wide\" is not an option"));
  CHECK_THAT(error("y", "", "a,b", "a*a"), Contains("names column a twice"));
  CHECK_THAT(error("y:positive=1:negative=1", "", "a", ""),
             Contains("positive and negative are both \"1\""));
  CHECK_THAT(error("y:negative=NO", "", "a", ""), Contains("needs the positive one too"));
  CHECK_THAT(error("y:yes", "", "a", ""), Contains("\"yes\" is not an option"));
  CHECK_THAT(error("y", "p:bucketize:auto:1", "a", ""),
             Contains("bucketize auto N takes a bucket count from 2 to 1024"));
  // A label by value refuses a value it does not name, and an empty cell.
  proto::FeedSchema schema = logSchema();
  SchemaColumns columns = requireValue(SchemaColumns::make(schema));
  auto format = requireValue(makeLineFormat("csv", columns));
  REQUIRE_OK(format->readHeader("clicked,price,cat,hour,recent"));
  FeedRows rows(columns.denseWidth(), columns.slots(), columns.weighted());
  CHECK_THAT(errorText(format->parse("maybe,1,a,3,", rows, rows.add())),
             Contains("label clicked is \"maybe\"; it must be YES (1) or NO (0)"));
  // Statistics not computed yet: a feed refuses to guess them.
  proto::FeedSchema pending = requireValue(schemaFromFlags("y", "p:standardize", "a", ""));
  CHECK_THAT(errorText(SchemaColumns::make(pending).takeError()),
             Contains("dense column p: its mean and std are not computed yet"));
}

TEST_CASE("a schema file with crosses, a label by value and auto statistics reads back as "
          "oar-show describes it",
          "[feed][schema]") {
  std::string path = scratchDir("cross_columns") + "/cross.schema";
  std::ofstream(path) << "label searched positive YES\ndense price bucketize auto 8\n"
                         "sparse cat\nsparse recent multi 4\ncross recent*cat deep\n"
                         "cross cat*price\n";
  proto::FeedSchema s = requireValue(readSchemaFile(path));
  CHECK(s.label_positive() == "YES");
  CHECK(s.dense(0).auto_buckets() == 8);
  REQUIRE(s.cross_size() == 2);
  CHECK(s.cross(0).deep());
  CHECK_FALSE(s.cross(1).deep());
  std::ofstream(path) << describeSchema(s);
  proto::FeedSchema again = requireValue(readSchemaFile(path));
  CHECK(describeSchema(again) == describeSchema(s));
  CHECK(again.cross_size() == 2);
  CHECK(again.label_positive() == "YES");
  // The sections a CTR model lays out: single slots, bucketized, multi, single crosses, multi.
  std::vector<std::string> order;
  for (const KeySection &k : keySections(s))
    order.push_back(k.name + (k.deep ? "" : "(wide)"));
  CHECK(order == std::vector<std::string>{"cat", "price", "recent", "cat*price(wide)",
                                          "recent*cat"});
}

TEST_CASE("the statistics pass leaves missing cells out and names a column it cannot "
          "standardize",
          "[feed][schema]") {
  std::string path = scratchDir("schema_statistics") + "/stats.csv";
  std::ofstream(path) << "y,p,q,c\n1,1,5,a\n0,,5,b\n1,3,5,a\n0,8,5,c\n";
  proto::FeedSchema s =
      requireValue(schemaFromFlags("y", "p:standardize,q:bucketize:auto:4", "c", ""));
  DataStatistics stats = requireValue(computeSchemaStatistics(s, "csv", {path}));
  CHECK(stats.rows == 4);
  CHECK(stats.distinctKeys >= 3);
  CHECK(s.dense(0).mean() == 4.0);
  CHECK_FALSE(s.dense(0).auto_stats());
  CHECK(s.dense(1).boundaries_size() == 1); // one value: every quantile the same boundary
  proto::FeedSchema constant = requireValue(schemaFromFlags("y", "q:standardize", "c", ""));
  CHECK_THAT(errorText(computeSchemaStatistics(constant, "csv", {path}).takeError()),
             Contains("dense column q: every value in the training data is 5"));
  std::ofstream(path) << "y,p,q,c\n1,1,5,a\n0,x,5,b\n";
  CHECK_THAT(errorText(computeSchemaStatistics(s, "csv", {path}).takeError()),
             Contains("stats.csv:3:"));
}
