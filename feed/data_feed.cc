// Dataset readers (uci_housing, mnist_idx, npy, csv) and batch dealing.
#include "feed/data_feed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <zlib.h>

#include "executor/finite_check.h"
#include "executor/npy.h"
#include "feed/line_format.h"
#include "feed/schema.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"

namespace oar {

namespace {

/// Parses whitespace-separated numbers per line (uci_housing's layout).
llvm::Expected<std::vector<std::vector<double>>> readNumberRows(llvm::StringRef path, char sep,
                                                                size_t width, bool skipHeader) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return makeError("{0}: cannot read data file: {1}", path, buf.getError().message());
  if ((*buf)->getBuffer().startswith("\x1f\x8b"))
    return makeError("{0}: the file is gzip-compressed; this feed reads plain text (a feed with a "
                     "schema streams gzip: docs/data.md)",
                     path);
  std::vector<std::vector<double>> rows;
  llvm::SmallVector<llvm::StringRef, 32> lines, fields;
  (*buf)->getBuffer().split(lines, '\n');
  for (size_t ln = 0; ln < lines.size(); ++ln) {
    llvm::StringRef line = lines[ln].trim();
    if (skipHeader && ln == 0) {
      // A header has a name in it; a first line of numbers is a row that would be dropped.
      fields.clear();
      line.split(fields, sep);
      double v;
      if (llvm::all_of(fields, [&](llvm::StringRef f) { return !f.trim().getAsDouble(v); }))
        return makeError("{0}:1: the feed skips a header, but line 1 is a row of numbers", path);
      continue;
    }
    if (line.empty())
      continue;
    fields.clear();
    if (sep == ' ')
      llvm::SplitString(line, fields, " \t");
    else
      line.split(fields, sep);
    if (fields.size() != width)
      return makeError("{0}:{1}: malformed row: {2} fields, expected {3}", path, ln + 1,
                       fields.size(), width);
    std::vector<double> row;
    for (llvm::StringRef f : fields) {
      double v;
      if (f.trim().getAsDouble(v))
        return makeError("{0}:{1}: malformed row: \"{2}\" is not a number", path, ln + 1, f.trim());
      if (!std::isfinite(v))
        return makeError("{0}:{1}: field {2} is {3}; data must be finite", path, ln + 1,
                         row.size() + 1, f.trim());
      row.push_back(v);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

/// Paddle's uci_housing: (x - mean) / (max - min) per feature over all rows; 80/20 split.
llvm::Expected<std::vector<Tensor>> readUciHousing(const proto::DataFeed &feed) {
  if (feed.files_size() != 1)
    return makeError("uci_housing feed needs one file (housing.data), got {0}", feed.files_size());
  auto rows = readNumberRows(feed.files(0), ' ', 14, false);
  if (!rows)
    return rows.takeError();
  size_t n = rows->size();
  if (n == 0)
    return makeError("{0}: no rows", feed.files(0));
  for (int f = 0; f < 13; ++f) {
    double lo = 1e300, hi = -1e300, sum = 0;
    for (auto &r : *rows)
      lo = std::min(lo, r[f]), hi = std::max(hi, r[f]), sum += r[f];
    double mean = sum / n;
    for (auto &r : *rows)
      r[f] = (r[f] - mean) / (hi - lo);
  }
  size_t trainRows = n * 8 / 10, begin = 0, end = n;
  if (feed.split() == "train" || feed.split().empty())
    end = trainRows;
  else if (feed.split() == "test")
    begin = trainRows;
  else if (feed.split() != "all")
    return makeError("uci_housing split \"{0}\" must be train, test or all", feed.split());
  int64_t count = static_cast<int64_t>(end - begin);
  Tensor x(proto::F32, {count, 13}), y(proto::F32, {count, 1});
  for (int64_t i = 0; i < count; ++i) {
    for (int f = 0; f < 13; ++f)
      x.data<float>()[i * 13 + f] = static_cast<float>((*rows)[begin + i][f]);
    y.data<float>()[i] = static_cast<float>((*rows)[begin + i][13]);
  }
  return std::vector<Tensor>{x, y};
}

/// The whole decompressed content of a gzip (or plain) file.
llvm::Expected<std::string> readGzip(llvm::StringRef path) {
  gzFile f = gzopen(path.str().c_str(), "rb");
  if (!f)
    return makeError("{0}: cannot open data file: {1}", path, std::strerror(errno));
  std::string out;
  char chunk[1 << 16];
  int got;
  while ((got = gzread(f, chunk, sizeof(chunk))) > 0)
    out.append(chunk, got);
  int err;
  std::string msg = gzerror(f, &err); // a copy: gzclose frees the message
  gzclose(f);
  if (got < 0 || (err != Z_OK && err != Z_STREAM_END))
    return makeError("{0}: corrupt gzip data: {1}", path, msg);
  return out;
}

uint32_t bigEndian32(const std::string &s, size_t at) {
  auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(s[at + i])); };
  return b(0) << 24 | b(1) << 16 | b(2) << 8 | b(3);
}

/// MNIST IDX images (x = pixel/255*2 - 1) and labels (i64).
llvm::Expected<std::vector<Tensor>> readMnist(const proto::DataFeed &feed) {
  if (feed.files_size() != 2)
    return makeError("mnist_idx feed needs two files (images, labels), got {0}", feed.files_size());
  auto images = readGzip(feed.files(0));
  if (!images)
    return images.takeError();
  auto labels = readGzip(feed.files(1));
  if (!labels)
    return labels.takeError();
  if (images->size() < 16 || bigEndian32(*images, 0) != 2051)
    return makeError("{0}: not an IDX image file (magic must be 2051)", feed.files(0));
  if (labels->size() < 8 || bigEndian32(*labels, 0) != 2049)
    return makeError("{0}: not an IDX label file (magic must be 2049)", feed.files(1));
  int64_t n = bigEndian32(*images, 4), h = bigEndian32(*images, 8), w = bigEndian32(*images, 12);
  // Three 32-bit counts may overflow 64 bits, and so may two: check each product before comparing.
  int64_t imageSize = 0, pixels = 0;
  if (__builtin_mul_overflow(h, w, &imageSize) || __builtin_mul_overflow(n, imageSize, &pixels) ||
      static_cast<int64_t>(images->size()) - 16 != pixels)
    return makeError("{0}: {1} bytes but the header promises {2} images of {3}x{4}", feed.files(0),
                     images->size(), n, h, w);
  int64_t nl = bigEndian32(*labels, 4);
  if (nl != n || static_cast<int64_t>(labels->size()) != 8 + nl)
    return makeError("{0}: {1} labels but {2} has {3} images", feed.files(1), nl, feed.files(0), n);
  Tensor x(proto::F32, {n, imageSize}), y(proto::I64, {n, 1});
  for (int64_t i = 0; i < pixels; ++i)
    x.data<float>()[i] = static_cast<uint8_t>((*images)[16 + i]) / 255.0f * 2.0f - 1.0f;
  for (int64_t i = 0; i < n; ++i)
    y.data<int64_t>()[i] = static_cast<uint8_t>((*labels)[8 + i]);
  return std::vector<Tensor>{x, y};
}

llvm::Expected<std::vector<Tensor>> readNpyColumns(const proto::DataFeed &feed) {
  std::vector<Tensor> cols;
  for (const std::string &f : feed.files()) {
    auto t = readNpy(f);
    if (!t)
      return t.takeError();
    cols.push_back(std::move(*t));
  }
  return cols;
}

/// CSV: the columns' vars take fields left to right, each as many as its row width.
llvm::Expected<std::vector<Tensor>> readCsv(const proto::DataFeed &feed,
                                            const std::vector<const proto::Var *> &vars) {
  if (feed.files_size() != 1)
    return makeError("csv feed needs one file, got {0}", feed.files_size());
  size_t width = 0;
  std::vector<int64_t> widths;
  for (const proto::Var *v : vars) {
    widths.push_back(numElements(dimsOf(v->type()).drop_front()));
    width += widths.back();
  }
  auto rows = readNumberRows(feed.files(0), ',', width, feed.skip_header());
  if (!rows)
    return rows.takeError();
  int64_t n = static_cast<int64_t>(rows->size());
  if (n == 0)
    return makeError("{0}: no rows", feed.files(0));
  std::vector<Tensor> cols;
  size_t field = 0;
  for (size_t c = 0; c < vars.size(); ++c) {
    Tensor t(vars[c]->type().dtype(), {n, widths[c]});
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < widths[c]; ++j) {
        double v = (*rows)[r][field + j];
        bool integral = t.dtype() == proto::I32 || t.dtype() == proto::I64;
        if (integral && v != std::floor(v))
          return makeError("{0}: row {1}, field {2} is {3}, but var {4} holds integers ({5})",
                           feed.files(0), r + 1, field + j + 1, v, vars[c]->name(),
                           dtypeName(t.dtype()));
        switch (t.dtype()) {
        case proto::F32:
          t.data<float>()[r * widths[c] + j] = static_cast<float>(v);
          break;
        case proto::F64:
          t.data<double>()[r * widths[c] + j] = v;
          break;
        case proto::I32:
          t.data<int32_t>()[r * widths[c] + j] = static_cast<int32_t>(v);
          break;
        default:
          t.data<int64_t>()[r * widths[c] + j] = static_cast<int64_t>(v);
          break;
        }
      }
    field += widths[c];
    cols.push_back(std::move(t));
  }
  return cols;
}

llvm::Expected<std::vector<Tensor>> readColumns(const proto::DataFeed &feed,
                                                const std::vector<const proto::Var *> &vars) {
  if (feed.format() == "uci_housing")
    return readUciHousing(feed);
  if (feed.format() == "mnist_idx")
    return readMnist(feed);
  if (feed.format() == "npy")
    return readNpyColumns(feed);
  if (feed.format() == "csv")
    return readCsv(feed, vars);
  if (feed.format() == "criteo" || feed.format() == "tsv" || feed.format() == "slot" ||
      feed.format() == "libffm" || feed.format() == "libsvm")
    return makeError("the {0} format is streamed; read it with openBatchSource", feed.format());
  return makeError("unknown data format \"{0}\" ({1})", feed.format(), kFeedFormatList);
}

} // namespace

llvm::Error checkFeed(const proto::DataFeed &feed, const proto::Block &block) {
  if (!llvm::is_contained(kFeedFormats, feed.format()))
    return makeError("unknown data format \"{0}\" ({1})", feed.format(), kFeedFormatList);
  bool named = llvm::is_contained(kSchemaFormats, feed.format());
  if (feed.has_schema() && !named)
    return makeError("the {0} feed has a schema, which only csv, tsv, slot, libffm and libsvm feeds "
                     "read",
                     feed.format());
  if (!feed.has_schema() && named && feed.format() != "csv")
    return makeError("the {0} feed finds its columns by name: it needs a schema (oar-model "
                     "--label, --dense, --sparse or --schema; docs/data.md)",
                     feed.format());
  if (feed.has_schema())
    if (llvm::Error err = checkSchema(feed.schema()))
      return err;
  if (feed.files_size() == 0)
    return makeError("the {0} feed names no data files", feed.format());
  if (feed.columns_size() == 0)
    return makeError("the {0} feed names no columns (the vars its columns feed)", feed.format());
  for (const std::string &c : feed.columns())
    if (!findVar(block, c))
      return makeError("data feed column \"{0}\" is not a declared var", c);
  if (feed.batch_size() <= 0 || feed.epochs() < 0)
    return makeError("data feed batch size {0} and epochs {1} must be positive", feed.batch_size(),
                     feed.epochs());
  return llvm::Error::success();
}

llvm::Expected<Dataset> loadDataset(const proto::DataFeed &feed, const proto::Block &block) {
  std::vector<const proto::Var *> vars;
  for (const std::string &c : feed.columns()) {
    const proto::Var *v = findVar(block, c);
    if (!v)
      return makeError("data feed column {0} is not a declared var", c);
    if (v->type().dims_size() == 0)
      return makeError("data feed var {0} has no dims", c);
    vars.push_back(v);
  }
  if (feed.batch_size() <= 0)
    return makeError("data feed batch_size is {0}; it must be positive", feed.batch_size());
  auto cols = readColumns(feed, vars);
  if (!cols)
    return cols.takeError();
  if (cols->size() != vars.size())
    return makeError("{0} data gives {1} columns but the feed names {2} vars", feed.format(),
                     cols->size(), vars.size());
  Dataset ds;
  ds.rows = (*cols)[0].rank() ? (*cols)[0].dim(0) : 0;
  if (feed.limit() > 0)
    ds.rows = std::min(ds.rows, feed.limit());
  for (size_t c = 0; c < vars.size(); ++c) {
    Tensor &t = (*cols)[c];
    const proto::Var &v = *vars[c];
    std::string file = feed.files_size() ? feed.files(std::min<int>(c, feed.files_size() - 1)) : "";
    int64_t rowWidth = numElements(dimsOf(v.type()).drop_front());
    if (t.rank() == 0 || t.dim(0) < ds.rows ||
        t.numel() / std::max<int64_t>(t.dim(0), 1) != rowWidth)
      return makeError("{0}: column for var {1} is {2}{3} but the var is {4}", file, v.name(),
                       dtypeName(t.dtype()), dimsString(t.dims()), typeString(v.type()));
    if (t.dtype() != v.type().dtype())
      return makeError("{0}: column for var {1} is {2} but the var is {3}", file, v.name(),
                       dtypeName(t.dtype()), typeString(v.type()));
    if (std::optional<int64_t> bad = firstNonFinite(t))
      return makeError("{0}: row {1} of the column for var {2} holds a NaN or inf; data must be "
                       "finite",
                       file, *bad / std::max<int64_t>(rowWidth, 1), v.name());
    std::vector<int64_t> dims(v.type().dims().begin(), v.type().dims().end());
    dims[0] = t.dim(0);
    t.reshape(dims);
    ds.columns.push_back(v.name());
    ds.data.push_back(t);
  }
  return ds;
}

BatchReader::BatchReader(const Dataset &data, const proto::DataFeed &feed, int64_t trainerId,
                         int64_t trainers)
    : data_(data), batchSize_(feed.batch_size()), epochs_(std::max<int64_t>(feed.epochs(), 1)),
      shuffle_(feed.shuffle()), rng_(feed.seed()), trainerId_(trainerId), trainers_(trainers) {}

int64_t BatchReader::batchesPerEpoch() const {
  int64_t mine = (data_.rows - trainerId_ + trainers_ - 1) / trainers_;
  return (mine + batchSize_ - 1) / batchSize_;
}

void BatchReader::startEpoch() {
  ++epoch_;
  std::vector<int64_t> order(data_.rows);
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) // Fisher-Yates with our own index draw, the same on every machine
    for (int64_t i = data_.rows - 1; i > 0; --i)
      std::swap(order[i], order[rng_() % static_cast<uint64_t>(i + 1)]);
  mine_.clear();
  for (int64_t i = trainerId_; i < data_.rows; i += trainers_)
    mine_.push_back(order[i]);
  pos_ = 0;
}

bool BatchReader::next(std::vector<Tensor> &batch, int64_t &epoch) {
  if (epoch_ < 0 || pos_ >= mine_.size()) {
    if (epoch_ + 1 >= epochs_)
      return false;
    startEpoch();
    if (mine_.empty())
      return false;
  }
  int64_t n = std::min<int64_t>(batchSize_, mine_.size() - pos_);
  batch.resize(data_.data.size());
  for (size_t c = 0; c < data_.data.size(); ++c) {
    const Tensor &col = data_.data[c];
    std::vector<int64_t> dims(col.dims().begin(), col.dims().end());
    dims[0] = n;
    batch[c].resize(col.dtype(), dims);
    size_t rowBytes = col.bytes() / col.dim(0);
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(static_cast<char *>(batch[c].raw()) + r * rowBytes,
                  static_cast<const char *>(col.raw()) + mine_[pos_ + r] * rowBytes, rowBytes);
  }
  pos_ += n;
  epoch = epoch_;
  return true;
}

} // namespace oar
