// What every streamed feed refuses to train on: a gzip file cut short, a file or a trainer's
// share without rows, and a line too long to be a row.
#include "feed/criteo_feed.h"
#include "feed/line_reader.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// Reads trainer `id` of `trainers`'s share of `file` to its end: its row count, or the error.
llvm::Expected<int64_t> countRows(const std::string &file, int64_t id = 0, int64_t trainers = 1) {
  proto::Block block = criteoBlock();
  auto src = openCriteoSource(criteoFeed({file}, 16), block, id, trainers);
  if (!src)
    return src.takeError();
  std::vector<Tensor> batch;
  int64_t epoch, rows = 0;
  for (;;) {
    auto more = (*src)->next(batch, epoch);
    if (!more)
      return more.takeError();
    if (!*more)
      return rows;
    rows += batch[0].dim(0);
  }
}

std::string criteoLines(int n) {
  std::string text;
  for (int i = 0; i < n; ++i) {
    text += std::to_string(i % 2) + "\t" + std::to_string(i);
    for (int j = 1; j < 13; ++j)
      text += "\t" + std::to_string(i * j % 97);
    for (int c = 0; c < 26; ++c)
      text += "\t" + std::to_string(int64_t(1000003) * (i + 1) * (c + 1) % 0xffffff);
    text += "\n";
  }
  return text;
}

} // namespace

TEST_CASE("a gzip file cut short is an error, at a line's end or inside one", "[feed][data]") {
  std::string dir = scratchDir("stream_cut_gzip");
  writeFile(dir + "/train.txt", criteoLines(3000));
  std::string out;
  REQUIRE(runCommand("gzip -kf " + dir + "/train.txt", out) == 0);
  std::string whole = readFile(dir + "/train.txt.gz");
  CHECK(requireValue(countRows(dir + "/train.txt.gz")) == 3000);
  // Without its 8-byte trailer (CRC and length), every line is there: still not the file.
  writeFile(dir + "/no_trailer.txt.gz", whole.substr(0, whole.size() - 8));
  CHECK_THAT(errorText(countRows(dir + "/no_trailer.txt.gz")),
             Contains("no_trailer.txt.gz: the gzip stream stops before its end: the file is cut "
                      "short"));
  for (size_t keep : {whole.size() / 2, whole.size() - 40}) {
    INFO("the first " << keep << " of " << whole.size() << " bytes");
    writeFile(dir + "/cut.txt.gz", whole.substr(0, keep));
    CHECK_THAT(errorText(countRows(dir + "/cut.txt.gz")),
               Contains("cut.txt.gz: the gzip stream stops before its end"));
  }
}

TEST_CASE("a file or a trainer's share without rows is an error, not zero steps", "[feed][data]") {
  std::string dir = scratchDir("stream_no_rows");
  writeFile(dir + "/empty.txt", "");
  CHECK_THAT(errorText(countRows(dir + "/empty.txt")),
             Contains("empty.txt: no data rows (an empty file?)"));
  writeFile(dir + "/blank.txt", "\n\n  \n");
  CHECK_THAT(errorText(countRows(dir + "/blank.txt")), Contains("no data rows"));
  writeFile(dir + "/two.txt", criteoLines(2));
  CHECK(requireValue(countRows(dir + "/two.txt", 1, 2)) == 1);
  CHECK_THAT(errorText(countRows(dir + "/two.txt", 2, 3)),
             Contains("two.txt: trainer 2 of 3 gets no data rows (it reads lines i mod 3 = 2; the "
                      "file has fewer than 3 data lines, or those are blank)"));
}

TEST_CASE("a line longer than the reader's bound is an error naming the file and line",
          "[feed][data]") {
  std::string dir = scratchDir("stream_long_line");
  std::string path = dir + "/long.txt";
  writeFile(path, criteoLines(3) + std::string(LineReader::kMaxLine + 1000, 'x') + "\n" +
                      criteoLines(1));
  CHECK_THAT(errorText(countRows(path)),
             Contains("long.txt:4: the line is longer than 16 MiB"));
  // A line just under the bound is read (and is then a bad row, with its line).
  writeFile(path, criteoLines(1) + std::string(LineReader::kMaxLine - 10, '1') + "\n");
  CHECK_THAT(errorText(countRows(path)), Contains("long.txt:2: "));
  llvm::sys::fs::remove(path);
}
