// libFuzzer target: the data readers. Byte 0 picks the reader: a Criteo line parser (each line of
// the rest), CSV, UCI housing, or MNIST IDX (two files: bytes 1-2, little-endian, give the image
// file's length, the label file takes what is left).
#include "feed/criteo_feed.h"
#include "feed/data_feed.h"
#include "fuzz/fuzz_input.h"
#include "ir/program.h"

using namespace oar;

static proto::Block block(std::initializer_list<std::pair<const char *, std::vector<int64_t>>> vars,
                          proto::DType dtype = proto::F32) {
  proto::Block b;
  for (const auto &[name, dims] : vars)
    declareVar(b, name, dtype, dims);
  return b;
}

/// Loads `files` in `format` into `columns` (vars of `b`); errors are expected and dropped.
static void load(const char *format, std::initializer_list<std::string> files,
                 std::initializer_list<const char *> columns, const proto::Block &b,
                 const char *split = "") {
  proto::DataFeed feed;
  feed.set_format(format);
  for (const std::string &f : files)
    feed.add_files(f);
  for (const char *c : columns)
    feed.add_columns(c);
  feed.set_split(split);
  feed.set_batch_size(4);
  feed.set_epochs(1);
  auto ds = loadDataset(feed, b);
  if (!ds)
    llvm::consumeError(ds.takeError());
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t *rest = data + 1;
  size_t n = size - 1;
  switch (data[0] % 4) {
  case 0: {
    llvm::StringRef text(reinterpret_cast<const char *>(rest), n);
    while (!text.empty()) {
      auto [line, tail] = text.split('\n');
      CriteoRow row;
      llvm::consumeError(parseCriteoLine(line, row));
      text = tail;
    }
    return 0;
  }
  case 1: {
    fuzz::MemoryFile file(rest, n);
    load("csv", {file.path()}, {"x", "y"}, block({{"x", {-1, 2}}, {"y", {-1, 1}}}));
    return 0;
  }
  case 2: {
    fuzz::MemoryFile file(rest, n);
    load("uci_housing", {file.path()}, {"x", "y"}, block({{"x", {-1, 13}}, {"y", {-1, 1}}}), "all");
    return 0;
  }
  default: {
    if (n < 2)
      return 0;
    size_t cut = std::min<size_t>(rest[0] | rest[1] << 8, n - 2);
    fuzz::MemoryFile images(rest + 2, cut), labels(rest + 2 + cut, n - 2 - cut);
    proto::Block b = block({{"img", {-1, 784}}});
    declareVar(b, "label", proto::I64, {-1, 1});
    load("mnist_idx", {images.path(), labels.path()}, {"img", "label"}, b);
    return 0;
  }
  }
}
