// Data feeds: formats, errors with file and line, and dealing rows to trainers.
#include <fstream>

#include "executor/npy.h"
#include "feed/data_feed.h"
#include "test/helpers/expect.h"

using namespace oar;
using Catch::Matchers::Contains;

static proto::Block blockWith(std::vector<std::pair<std::string, std::vector<int64_t>>> vars,
                              DType dtype = proto::F32) {
  proto::Block b;
  for (auto &[name, dims] : vars)
    declareVar(b, name, dtype, dims);
  return b;
}

static proto::DataFeed feed(const std::string &format, std::vector<std::string> files,
                            std::vector<std::string> columns, int64_t batch) {
  proto::DataFeed f;
  f.set_format(format);
  for (auto &x : files)
    f.add_files(x);
  for (auto &c : columns)
    f.add_columns(c);
  f.set_batch_size(batch);
  f.set_epochs(1);
  return f;
}

TEST_CASE("uci_housing gives Paddle's normalised 404/102 split", "[executor][data]") {
  proto::Block b = blockWith({{"x", {-1, 13}}, {"y", {-1, 1}}});
  std::string file = sourceDir() + "/data/uci_housing/housing.data";
  proto::DataFeed f = feed("uci_housing", {file}, {"x", "y"}, 20);
  Dataset train = requireValue(loadDataset(f, b));
  f.set_split("test");
  Dataset test = requireValue(loadDataset(f, b));
  CHECK(train.rows == 404);
  CHECK(test.rows == 102);
  CHECK(train.data[1].data<float>()[0] == Approx(24.0f)); // the first row's MEDV
  // Normalised features lie within [-1, 1].
  for (int64_t i = 0; i < train.data[0].numel(); ++i)
    CHECK(std::abs(train.data[0].data<float>()[i]) <= 1.0f);
}

TEST_CASE("mnist_idx reads images scaled to -1..1 and i64 labels", "[executor][data]") {
  proto::Block b;
  declareVar(b, "img", proto::F32, {-1, 1, 28, 28});
  declareVar(b, "label", proto::I64, {-1, 1});
  std::string dir = sourceDir() + "/data/mnist/";
  proto::DataFeed f =
      feed("mnist_idx", {dir + "t10k-images-idx3-ubyte.gz", dir + "t10k-labels-idx1-ubyte.gz"},
           {"img", "label"}, 32);
  Dataset ds = requireValue(loadDataset(f, b));
  CHECK(ds.rows == 10000);
  CHECK(ds.data[0].dims() == llvm::ArrayRef<int64_t>{10000, 1, 28, 28});
  CHECK(ds.data[1].data<int64_t>()[0] == 7); // the first test labels: 7 2 1 0
  CHECK(ds.data[1].data<int64_t>()[3] == 0);
  CHECK(ds.data[0].data<float>()[0] == -1.0f);
}

TEST_CASE("an IDX header whose counts overflow 64 bits is refused before anything is allocated",
          "[executor][data][errors]") {
  // 2^31 images of 2^31 x 4 pixels: 2^64 bytes, which wraps to 0 and so "matches" an empty body.
  auto header = [](std::vector<uint32_t> words) {
    std::string out;
    for (uint32_t w : words)
      for (int shift = 24; shift >= 0; shift -= 8)
        out += static_cast<char>((w >> shift) & 0xff);
    return out;
  };
  std::string dir = scratchDir("idx_overflow");
  writeFile(dir + "/images.idx", header({2051, 1u << 31, 1u << 31, 4}));
  writeFile(dir + "/labels.idx", header({2049, 1u << 31}));
  proto::Block b;
  declareVar(b, "img", proto::F32, {-1, 1, 28, 28});
  declareVar(b, "label", proto::I64, {-1, 1});
  proto::DataFeed f =
      feed("mnist_idx", {dir + "/images.idx", dir + "/labels.idx"}, {"img", "label"}, 32);
  CHECK_THAT(errorText(loadDataset(f, b)),
             Contains("images.idx: 16 bytes but the header promises 2147483648 images of "
                      "2147483648x4"));
  // No images of 2^32-1 x 2^32-1 pixels: the image size alone overflows (found by fuzz_data), and
  // 0 times the wrapped size would otherwise "match" the empty body.
  writeFile(dir + "/images.idx", header({2051, 0, 0xffffffffu, 0xffffffffu}));
  writeFile(dir + "/labels.idx", header({2049, 0}));
  CHECK_THAT(errorText(loadDataset(f, b)),
             Contains("images.idx: 16 bytes but the header promises 0 images of "
                      "4294967295x4294967295"));
}

TEST_CASE("N trainers with batch B together see one batch of N*B", "[executor][data]") {
  std::string dir = scratchDir("dealing");
  std::vector<float> rows(23);
  for (int i = 0; i < 23; ++i)
    rows[i] = static_cast<float>(i);
  REQUIRE_OK(writeNpy(dir + "/x.npy", Tensor::fromVector<float>({23, 1}, rows)));
  proto::Block b = blockWith({{"x", {-1, 1}}});
  for (bool shuffle : {false, true}) {
    proto::DataFeed one = feed("npy", {dir + "/x.npy"}, {"x"}, 6);
    one.set_shuffle(shuffle);
    one.set_seed(9);
    one.set_epochs(2);
    proto::DataFeed three = one;
    three.set_batch_size(2);
    Dataset ds = requireValue(loadDataset(one, b));
    BatchReader whole(ds, one);
    std::vector<BatchReader> parts;
    for (int t = 0; t < 3; ++t)
      parts.emplace_back(ds, three, t, 3);
    std::vector<Tensor> batch;
    int64_t epoch;
    while (whole.next(batch, epoch)) {
      std::multiset<float> want(batch[0].data<float>(), batch[0].data<float>() + batch[0].numel()),
          got;
      for (auto &p : parts) {
        std::vector<Tensor> pb;
        int64_t e;
        if (p.next(pb, e))
          got.insert(pb[0].data<float>(), pb[0].data<float>() + pb[0].numel());
      }
      CHECK(got == want);
    }
  }
}

TEST_CASE("data errors name the file and line", "[executor][data]") {
  std::string dir = scratchDir("data_errors");
  proto::Block b = blockWith({{"x", {-1, 2}}, {"y", {-1, 1}}});
  SECTION("missing file") {
    CHECK_THAT(errorText(loadDataset(feed("csv", {dir + "/nope.csv"}, {"x", "y"}, 2), b)),
               Contains("nope.csv"));
  }
  SECTION("malformed csv row") {
    std::ofstream(dir + "/bad.csv") << "a,b,c\n1,2,3\n4,five,6\n";
    proto::DataFeed f = feed("csv", {dir + "/bad.csv"}, {"x", "y"}, 2);
    f.set_skip_header(true);
    CHECK_THAT(errorText(loadDataset(f, b)),
               Contains("bad.csv:3: malformed row") && Contains("five"));
  }
  SECTION("a csv row with too few fields") {
    std::ofstream(dir + "/short.csv") << "1,2,3\n4,5\n";
    CHECK_THAT(errorText(loadDataset(feed("csv", {dir + "/short.csv"}, {"x", "y"}, 2), b)),
               Contains("short.csv:2: malformed row: 2 fields, expected 3"));
  }
  SECTION("an npy column of the wrong width") {
    REQUIRE_OK(writeNpy(dir + "/wide.npy", Tensor(proto::F32, {4, 3})));
    REQUIRE_OK(writeNpy(dir + "/y.npy", Tensor(proto::F32, {4, 1})));
    CHECK_THAT(
        errorText(loadDataset(feed("npy", {dir + "/wide.npy", dir + "/y.npy"}, {"x", "y"}, 2), b)),
        Contains("wide.npy") && Contains("var x"));
  }
}

TEST_CASE("npy files round trip with dtype and shape", "[executor][data]") {
  std::string dir = scratchDir("npy");
  Tensor t = Tensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE_OK(writeNpy(dir + "/t.npy", t));
  Tensor back = requireValue(readNpy(dir + "/t.npy"));
  CHECK(back.dtype() == proto::I64);
  CHECK(back.toVector<int64_t>() == t.toVector<int64_t>());
  std::ofstream(dir + "/bad.npy") << "not numpy";
  CHECK_THAT(errorText(readNpy(dir + "/bad.npy")), Contains("bad.npy: not a .npy file"));
}

TEST_CASE("an npy header promising more than the file holds is refused before allocating",
          "[executor][data]") {
  std::string dir = scratchDir("npy_huge");
  // A 180-byte file whose header claims 99999999999 x 13 floats (about 5 TB).
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 13), }";
  header.append(117 - header.size(), ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + char(header.size()) + '\0' + header;
  bytes.append(180 - bytes.size(), '\0');
  writeFile(dir + "/huge.npy", bytes);
  CHECK_THAT(errorText(readNpy(dir + "/huge.npy")),
             Contains("huge.npy: data is 52 bytes but shape [99999999999,13] needs 5199999999948"));
  // Dims whose product overflows 64 bits.
  std::string over = header;
  over.replace(over.find("99999999999, 13"), 15, "4611686018427387904, 8");
  writeFile(dir + "/over.npy",
            std::string("\x93NUMPY\x01\x00", 8) + char(over.size()) + '\0' + over);
  CHECK_THAT(errorText(readNpy(dir + "/over.npy")),
             Contains("over.npy: shape") && Contains("is too large"));
}

TEST_CASE("a full disk while writing an npy file is an error, not an abort", "[executor][data]") {
  Tensor t = Tensor::fromVector<float>({1024}, std::vector<float>(1024, 1.0f));
  CHECK_THAT(errorText(writeNpy("/dev/full", t)), Contains("/dev/full: write failed"));
}
