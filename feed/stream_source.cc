// Streaming a feed's rows into batches, whatever the line format.
#include "feed/stream_source.h"

#include <random>

#include "feed/line_reader.h"
#include "support/error.h"
#include "support/hash.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

RowParser::~RowParser() = default;

namespace {

template <typename T> void put(Tensor &t, int64_t i, double v) { t.data<T>()[i] = T(v); }
void putNumber(Tensor &t, int64_t i, double v) {
  switch (t.dtype()) {
  case proto::F64:
    return put<double>(t, i, v);
  case proto::I64:
    return put<int64_t>(t, i, v);
  default:
    return put<float>(t, i, v);
  }
}

} // namespace

void fillBatch(const FeedRows &rows, const StreamLayout &layout, std::vector<Tensor> &batch) {
  int64_t n = rows.size(), width = layout.denseWidth, slots = layout.slots;
  const std::vector<DType> &dtypes = layout.dtypes;
  size_t c = 0;
  batch.resize(dtypes.size());
  batch[c].resize(dtypes[c], {n, 1}, /*zero=*/false);
  for (int64_t r = 0; r < n; ++r)
    putNumber(batch[c], r, rows.label(r));
  if (width > 0) {
    ++c;
    batch[c].resize(dtypes[c], {n, width}, /*zero=*/false);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < width; ++j)
        putNumber(batch[c], r * width + j, rows.dense(r)[j]);
  }
  if (slots == 0)
    return;
  ++c;
  batch[c].resize(proto::I64, {n, slots}, /*zero=*/false);
  auto *keys = reinterpret_cast<uint64_t *>(batch[c].data<int64_t>());
  for (int64_t r = 0; r < n; ++r)
    std::copy_n(rows.keys(r), slots, keys + r * slots);
  if (!layout.weights)
    return;
  ++c;
  batch[c].resize(proto::F32, {n, slots}, /*zero=*/false);
  for (int64_t r = 0; r < n; ++r)
    std::copy_n(rows.weights(r), slots, batch[c].data<float>() + r * slots);
}

namespace {

class StreamSource : public BatchSource {
public:
  StreamSource(const proto::DataFeed &feed, StreamLayout layout, std::vector<std::string> files,
               bool byLine, int64_t trainerId, int64_t trainers)
      : feed_(feed), layout_(std::move(layout)), files_(std::move(files)), byLine_(byLine),
        trainerId_(trainerId), trainers_(trainers),
        buffer_(layout_.denseWidth, layout_.slots, layout_.weights),
        batch_(layout_.denseWidth, layout_.slots, layout_.weights),
        pending_(layout_.denseWidth, layout_.slots, layout_.weights) {
    for (const std::string &c : feed.columns())
      columns_.push_back(c);
    capacity_ = feed.shuffle() ? (feed.shuffle_buffer() > 0 ? feed.shuffle_buffer() : 65536) : 0;
    llvm::consumeError(rewind());
  }

  llvm::Error rewind() override {
    epoch_ = -1;
    pending_.clear();
    atEnd_ = false;
    // Trainers shuffle their shares differently, each the same way every run.
    rng_.seed(static_cast<uint64_t>(feed_.seed()) * kGoldenGamma + trainerId_);
    return llvm::Error::success();
  }

  bool atEpochEnd() const override { return atEnd_; }
  int64_t batchesPerEpoch() const override { return 0; }

  llvm::Expected<bool> next(std::vector<Tensor> &batch, int64_t &epoch) override {
    int64_t epochs = std::max<int64_t>(feed_.epochs(), 1);
    while (pending_.size() == 0) { // the epoch is over (or not begun): start the next one
      if (epoch_ + 1 >= epochs)
        return false;
      startEpoch();
      if (llvm::Error err = pull(pending_))
        return err;
      if (pending_.size() == 0)
        return noRows();
    }
    batch_.clear();
    batch_.append(pending_, 0);
    pending_.clear();
    while (batch_.size() < feed_.batch_size()) {
      int64_t before = batch_.size();
      if (llvm::Error err = pull(batch_))
        return err;
      if (batch_.size() == before)
        break;
    }
    // Look one row ahead, so atEpochEnd() is known with the epoch's last batch.
    if (llvm::Error err = pull(pending_))
      return err;
    atEnd_ = pending_.size() == 0;
    fill(batch);
    epoch = epoch_;
    return true;
  }

private:
  /// A share without rows trains nothing: an error, not zero steps and exit 0.
  llvm::Error noRows() const {
    std::string files = llvm::join(files_, ", ");
    if (trainers_ == 1)
      return makeError("{0}: no data rows (an empty file?)", files);
    if (byLine_)
      return makeError("{0}: trainer {1} of {2} gets no data rows (it reads lines i mod {2} = "
                       "{1}; the file has fewer than {3} data lines, or those are blank)",
                       files, trainerId_, trainers_, trainerId_ + 1);
    return makeError("{0}: no data rows for trainer {1} of {2} (empty files?)", files, trainerId_,
                     trainers_);
  }

  void startEpoch() {
    ++epoch_;
    fileIdx_ = 0;
    reader_.close();
    buffer_.clear();
    streamDone_ = false;
  }

  /// Opens the next file of this trainer's share and reads its header; false after the last.
  llvm::Expected<bool> openNextFile() {
    if (fileIdx_ >= files_.size())
      return false;
    const std::string &path = files_[fileIdx_];
    if (llvm::Error err = reader_.open(path))
      return err;
    auto format = layout_.makeParser();
    if (!format)
      return format.takeError();
    format_ = std::move(*format);
    lineNo_ = dataLine_ = 0;
    if (format_->hasHeader()) {
      llvm::StringRef header;
      auto got = reader_.next(header);
      if (!got)
        return got.takeError();
      ++lineNo_;
      if (!*got)
        return makeError("{0}: the file is empty; a {1} file starts with its header", path,
                         feed_.format());
      if (llvm::Error err = format_->readHeader(header))
        return makeError("{0}:1: {1}", path, llvm::toString(std::move(err)));
    }
    return true;
  }

  /// Appends the next row of this trainer's share, in file order, to `out`; nothing at the
  /// epoch's end.
  llvm::Error readRow(FeedRows &out) {
    for (;;) {
      if (!reader_.isOpen()) {
        auto opened = openNextFile();
        if (!opened)
          return opened.takeError();
        if (!*opened)
          return llvm::Error::success();
      }
      llvm::StringRef line;
      auto got = reader_.next(line);
      if (!got)
        return got.takeError();
      ++lineNo_;
      ++dataLine_;
      if (!*got || (feed_.limit() > 0 && dataLine_ > feed_.limit())) {
        reader_.close();
        ++fileIdx_;
        continue;
      }
      if (byLine_ && (dataLine_ - 1) % trainers_ != trainerId_)
        continue;
      if (line.trim().empty())
        continue;
      int64_t r = out.add();
      if (llvm::Error err = format_->parse(line, out, r))
        return makeError("{0}:{1}: {2}", files_[fileIdx_], lineNo_, llvm::toString(std::move(err)));
      return llvm::Error::success();
    }
  }

  /// Appends the next row through the shuffle buffer (a random one of up to capacity_ rows
  /// read ahead) to `out`; nothing at the epoch's end.
  llvm::Error pull(FeedRows &out) {
    if (capacity_ == 0)
      return readRow(out);
    while (!streamDone_ && buffer_.size() < capacity_) {
      int64_t before = buffer_.size();
      if (llvm::Error err = readRow(buffer_))
        return err;
      streamDone_ = buffer_.size() == before;
    }
    if (buffer_.size() == 0)
      return llvm::Error::success();
    int64_t pick = static_cast<int64_t>(rng_() % static_cast<uint64_t>(buffer_.size()));
    out.append(buffer_, pick);
    buffer_.removeSwapLast(pick);
    return llvm::Error::success();
  }

  void fill(std::vector<Tensor> &batch) const { fillBatch(batch_, layout_, batch); }

  proto::DataFeed feed_;
  StreamLayout layout_;
  std::vector<std::string> files_; // this trainer's files
  bool byLine_;                    // one file shared by every trainer, split by data lines
  int64_t trainerId_, trainers_, capacity_ = 0;
  int64_t epoch_ = -1, lineNo_ = 0, dataLine_ = 0;
  size_t fileIdx_ = 0;
  LineReader reader_;
  std::unique_ptr<RowParser> format_; // of the open file
  FeedRows buffer_, batch_, pending_;  // the shuffle buffer, the batch, the row looked ahead
  bool streamDone_ = false, atEnd_ = false;
  std::mt19937_64 rng_;
};

} // namespace

llvm::Expected<std::vector<DType>> checkFeedVars(const proto::DataFeed &feed,
                                                 const proto::Block &block,
                                                 llvm::ArrayRef<FeedVarSpec> specs) {
  if (feed.columns_size() != static_cast<int>(specs.size())) {
    std::string vars;
    for (size_t c = 0; c < specs.size(); ++c)
      vars += llvm::formatv("{0}{1} [B, {2}]", c == 0 ? "" : ", ", specs[c].role, specs[c].width);
    return makeError("the {0} feed has {1} columns; it fills {2}: {3}", feed.format(),
                     feed.columns_size(), specs.size(), vars);
  }
  std::vector<DType> dtypes;
  for (size_t c = 0; c < specs.size(); ++c) {
    const FeedVarSpec &spec = specs[c];
    const proto::Var *v = findVar(block, feed.columns(c));
    if (!v)
      return makeError("{0} feed column {1} is not a declared var", feed.format(), feed.columns(c));
    auto dims = dimsOf(v->type());
    if (dims.size() != 2 || dims[1] != spec.width ||
        !llvm::is_contained(spec.dtypes, v->type().dtype()))
      return makeError("{0} feed column {1} ({2}) is var {3} of {4}; it must be [B, {5}] of {6}",
                       feed.format(), c + 1, spec.role, v->name(), typeString(v->type()),
                       spec.width, spec.dtypeNames);
    dtypes.push_back(v->type().dtype());
  }
  return dtypes;
}

llvm::Expected<std::unique_ptr<BatchSource>> openStreamSource(const proto::DataFeed &feed,
                                                              StreamLayout layout,
                                                              int64_t trainerId, int64_t trainers) {
  if (feed.batch_size() <= 0)
    return makeError("data feed batch_size is {0}; it must be positive", feed.batch_size());
  if (trainers < 1 || trainerId < 0 || trainerId >= trainers)
    return makeError("trainer {0} of {1} does not exist", trainerId, trainers);
  int64_t numFiles = feed.files_size();
  if (numFiles == 0)
    return makeError("the {0} feed names no data files", feed.format());
  if (numFiles > 1 && numFiles < trainers)
    return makeError("the {0} feed names {1} files for {2} trainers; give one file (trainers take "
                     "its lines in turn) or at least one file per trainer",
                     feed.format(), numFiles, trainers);
  std::vector<std::string> mine;
  for (int64_t f = numFiles > 1 ? trainerId : 0; f < numFiles; f += numFiles > 1 ? trainers : 1)
    mine.push_back(feed.files(f));
  for (const std::string &f : mine)
    if (!llvm::sys::fs::exists(f))
      return makeError("{0}: cannot open data file: no such file", f);
  return std::make_unique<StreamSource>(feed, std::move(layout), std::move(mine), numFiles == 1,
                                        trainerId, trainers);
}

} // namespace oar
