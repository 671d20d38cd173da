// The criteo feed: parsing, per-slot keys, trainers' shares, the shuffle buffer and its errors.
#include <cmath>
#include <fstream>
#include <set>

#include "feed/criteo_feed.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// A Criteo line whose I1 is `id` and whose other fields are fixed.
std::string lineWithId(int64_t id) {
  std::string s = std::to_string(id % 2) + "\t" + std::to_string(id);
  for (int j = 1; j < 13; ++j)
    s += "\t1";
  for (int c = 0; c < 26; ++c)
    s += "\tabcd00" + std::to_string(c % 10) + std::to_string(id % 10);
  return s + "\n";
}

/// Writes lines 0..n-1 (lineWithId) to `path`.
void writeIdLines(const std::string &path, int64_t begin, int64_t end) {
  std::ofstream out(path);
  for (int64_t i = begin; i < end; ++i)
    out << lineWithId(i);
}

/// Every batch's ids (I1, undone from log(1 + x)) in order, and how many batches there were.
std::vector<int64_t> readIds(BatchSource &src, int64_t *batches = nullptr) {
  std::vector<int64_t> ids;
  std::vector<Tensor> batch;
  int64_t epoch, count = 0;
  while (requireValue(src.next(batch, epoch))) {
    ++count;
    for (int64_t r = 0; r < batch[1].dim(0); ++r)
      ids.push_back(std::llround(std::expm1(batch[1].data<float>()[r * 13])));
  }
  if (batches)
    *batches = count;
  return ids;
}

} // namespace

TEST_CASE("criteo parses labels, log(1+x) integers and per-slot keys: missing fields too",
          "[executor][data][criteo]") {
  std::string dir = scratchDir("criteo_parse");
  // Line 1: every field; line 2: I2 and C2 missing, I3 = -1; line 3: all features missing.
  std::string cats = "68fd1e64\t68fd1e64";
  for (int c = 2; c < 26; ++c)
    cats += "\tv" + std::to_string(c);
  std::string ints = "0\t3\t-1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1";
  std::ofstream(dir + "/day.txt") << "1\t" << ints << "\t" << cats << "\n"
                                  << "0\t0\t\t-1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t1\t68fd1e64\t\t"
                                  << cats.substr(cats.find("\tv2") + 1) << "\r\n"
                                  << "0" << std::string(39, '\t') << "\n";
  auto src = requireValue(openCriteoSource(criteoFeed({dir + "/day.txt"}, 2), criteoBlock(), 0, 1));
  CHECK(src->columns() == std::vector<std::string>{"label", "dense", "sparse"});
  std::vector<Tensor> batch;
  int64_t epoch = -1;
  REQUIRE(requireValue(src->next(batch, epoch)));
  CHECK(epoch == 0);
  CHECK(!src->atEpochEnd());
  REQUIRE(batch.size() == 3);
  CHECK(batch[0].dims() == llvm::ArrayRef<int64_t>{2, 1});
  CHECK(batch[1].dims() == llvm::ArrayRef<int64_t>{2, 13});
  CHECK(batch[2].dims() == llvm::ArrayRef<int64_t>{2, 26});
  CHECK(batch[0].toVector<float>() == std::vector<float>{1, 0});
  const float *dense = batch[1].data<float>();
  CHECK(dense[0] == 0.0f);
  CHECK(dense[1] == Approx(std::log(4.0)));
  CHECK(dense[2] == Approx(-std::log(2.0))); // negative counts: -log(1 + |x|)
  CHECK(dense[13 + 1] == 0.0f);              // missing I2 on line 2
  const int64_t *keys = batch[2].data<int64_t>();
  CHECK(static_cast<uint64_t>(keys[0]) == criteoKey(0, "68fd1e64"));
  CHECK(keys[0] != keys[1]); // the same value in two slots: two keys
  CHECK(keys[26 + 0] == keys[0]);
  CHECK(static_cast<uint64_t>(keys[26 + 1]) == criteoKey(1, "")); // missing C2: its own key
  for (int64_t i = 0; i < batch[2].numel(); ++i)
    CHECK(keys[i] >= 0);

  REQUIRE(requireValue(src->next(batch, epoch)));
  CHECK(src->atEpochEnd());
  CHECK(batch[0].dim(0) == 1); // the epoch's last batch is smaller
  // All missing: dense zeros, and each slot's missing key, distinct per slot.
  std::set<int64_t> missing;
  for (int s = 0; s < 26; ++s) {
    CHECK(static_cast<uint64_t>(batch[2].data<int64_t>()[s]) == criteoKey(s, ""));
    missing.insert(batch[2].data<int64_t>()[s]);
  }
  CHECK(missing.size() == 26);
  CHECK(batch[1].toVector<float>() == std::vector<float>(13, 0.0f));
  CHECK(!requireValue(src->next(batch, epoch)));
}

TEST_CASE("criteo trainers read lines i mod N of one file, or files i mod N, each line once",
          "[executor][data][criteo]") {
  std::string dir = scratchDir("criteo_shards");
  writeIdLines(dir + "/all.txt", 0, 23);
  std::multiset<int64_t> seen;
  for (int t = 0; t < 3; ++t) {
    auto src =
        requireValue(openCriteoSource(criteoFeed({dir + "/all.txt"}, 4), criteoBlock(), t, 3));
    for (int64_t id : readIds(*src)) {
      CHECK(id % 3 == t);
      seen.insert(id);
    }
  }
  std::multiset<int64_t> want;
  for (int64_t i = 0; i < 23; ++i)
    want.insert(i);
  CHECK(seen == want);

  // Several files: whole files go to trainers in turn.
  std::vector<std::string> files;
  for (int f = 0; f < 5; ++f) {
    files.push_back(dir + "/part" + std::to_string(f) + ".txt");
    writeIdLines(files.back(), f * 10, f * 10 + 7);
  }
  seen.clear();
  for (int t = 0; t < 2; ++t) {
    auto src = requireValue(openCriteoSource(criteoFeed(files, 3), criteoBlock(), t, 2));
    for (int64_t id : readIds(*src)) {
      CHECK((id / 10) % 2 == t);
      seen.insert(id);
    }
  }
  CHECK(seen.size() == 35);
  CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == 35);
  CHECK_THAT(errorText(openCriteoSource(criteoFeed({files[0], files[1]}, 3), criteoBlock(), 0, 3)),
             Contains("2 files for 3 trainers"));
}

TEST_CASE("criteo's shuffle buffer is bounded and seeded", "[executor][data][criteo]") {
  std::string dir = scratchDir("criteo_shuffle");
  writeIdLines(dir + "/all.txt", 0, 1000);
  proto::DataFeed f = criteoFeed({dir + "/all.txt"}, 64);
  f.set_shuffle(true);
  f.set_shuffle_buffer(50);
  f.set_seed(3);
  f.set_epochs(2);
  auto src = requireValue(openCriteoSource(f, criteoBlock(), 0, 1));
  std::vector<int64_t> ids = readIds(*src);
  REQUIRE(ids.size() == 2000);
  std::vector<int64_t> first(ids.begin(), ids.begin() + 1000),
      second(ids.begin() + 1000, ids.end());
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 1000; ++i)
    CHECK(sorted[i] == i); // each line once per epoch
  // A row leaves the buffer before 50 later rows come in: row k is out by position k + 49.
  int64_t displaced = 0;
  for (int64_t pos = 0; pos < 1000; ++pos) {
    CHECK(first[pos] < pos + 50);
    displaced += first[pos] != pos;
  }
  CHECK(displaced > 900);
  CHECK(second != first); // each epoch in its own order

  // The same seed gives the same order, also after a rewind; another seed another.
  auto again = requireValue(openCriteoSource(f, criteoBlock(), 0, 1));
  CHECK(readIds(*again) == ids);
  REQUIRE_OK(again->rewind());
  CHECK(readIds(*again) == ids);
  f.set_seed(4);
  auto other = requireValue(openCriteoSource(f, criteoBlock(), 0, 1));
  CHECK(readIds(*other) != ids);
}

TEST_CASE("a bad criteo line is a one-line error naming the file and line",
          "[executor][data][criteo]") {
  std::string dir = scratchDir("criteo_errors");
  auto firstError = [&](const std::string &name, const std::string &bad) {
    std::ofstream(dir + "/" + name) << lineWithId(0) << lineWithId(1) << bad << "\n";
    auto src =
        requireValue(openCriteoSource(criteoFeed({dir + "/" + name}, 1), criteoBlock(), 0, 1));
    std::vector<Tensor> batch;
    int64_t epoch;
    for (;;) {
      auto more = src->next(batch, epoch);
      if (!more)
        return llvm::toString(more.takeError());
      if (!*more)
        return std::string("no error");
    }
  };
  std::string fields = firstError("fields.txt", "1\t2\t3");
  CHECK_THAT(fields, Contains("fields.txt:3: 3 tab-separated fields; a Criteo line has 40"));
  CHECK(fields.find('\n') == std::string::npos);
  std::string label = lineWithId(5);
  label[0] = '7';
  label.pop_back();
  CHECK_THAT(firstError("label.txt", label),
             Contains("label.txt:3: label is \"7\"; it must be 0 or 1"));
  std::string integer = lineWithId(5);
  integer.replace(integer.find("\t1\t"), 3, "\tx1\t");
  integer.pop_back();
  CHECK_THAT(firstError("int.txt", integer), Contains("int.txt:3: I2 is \"x1\""));
  CHECK_THAT(errorText(openCriteoSource(criteoFeed({dir + "/none.txt"}, 1), criteoBlock(), 0, 1)),
             Contains("none.txt: cannot open data file"));
  proto::Block narrow = criteoBlock();
  declareVar(narrow, "dense", proto::F32, {-1, 12});
  CHECK_THAT(errorText(openCriteoSource(criteoFeed({dir + "/int.txt"}, 1), narrow, 0, 1)),
             Contains("column 2 (dense) is var dense of f32[-1,12]; it must be [B, 13]"));
}
