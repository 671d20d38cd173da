// The criteo data feed: line parsing, per-slot key hashing, and the streaming batch source.
#include "executor/criteo_feed.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "feed/line_reader.h"
#include "ir/error.h"
#include "llvm/Support/FileSystem.h"

namespace oar {

uint64_t criteoKey(int slot, llvm::StringRef value) {
  // FNV-1a from a per-slot basis, then splitmix64's finaliser to spread the bits.
  uint64_t h = 0xcbf29ce484222325ULL ^ (static_cast<uint64_t>(slot + 1) * 0x9e3779b97f4a7c15ULL);
  for (char c : value)
    h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ULL;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
  return (h ^ (h >> 31)) >> 1; // 63 bits: non-negative as an i64
}

llvm::Error parseCriteoLine(llvm::StringRef line, CriteoRow &row) {
  constexpr size_t kFields = 1 + kCriteoDense + kCriteoSlots;
  llvm::StringRef fields[kFields];
  size_t n = 0;
  for (llvm::StringRef rest = line;; ++n) {
    auto [field, tail] = rest.split('\t');
    if (n < kFields)
      fields[n] = field;
    if (field.end() == line.end()) { // no tab left
      ++n;
      break;
    }
    rest = tail;
  }
  if (n != kFields)
    return makeError("{0} tab-separated fields; a Criteo line has {1} (label, I1-I13, C1-C26)", n,
                     kFields);
  if (fields[0] != "0" && fields[0] != "1")
    return makeError("label is \"{0}\"; it must be 0 or 1", fields[0]);
  row.label = fields[0] == "1" ? 1.0f : 0.0f;
  for (int j = 0; j < kCriteoDense; ++j) {
    llvm::StringRef f = fields[1 + j];
    int64_t v = 0;
    if (!f.empty() && f.getAsInteger(10, v))
      return makeError("I{0} is \"{1}\"; integer features must be integers or empty", j + 1, f);
    double mag = std::log1p(std::abs(static_cast<double>(v)));
    row.dense[j] = static_cast<float>(v < 0 ? -mag : mag);
  }
  for (int s = 0; s < kCriteoSlots; ++s)
    row.keys[s] = criteoKey(s, fields[1 + kCriteoDense + s]);
  return llvm::Error::success();
}

namespace {

/// What each of the three columns holds, and the dtypes its var may have.
struct ColumnSpec {
  const char *role;
  int64_t width;
  std::vector<DType> dtypes;
};
const ColumnSpec kColumns[] = {{"label", 1, {proto::F32, proto::F64, proto::I64}},
                               {"dense", kCriteoDense, {proto::F32, proto::F64}},
                               {"sparse", kCriteoSlots, {proto::I64}}};

class CriteoSource : public BatchSource {
public:
  CriteoSource(const proto::DataFeed &feed, std::vector<std::string> files, bool byLine,
               std::vector<DType> dtypes, int64_t trainerId, int64_t trainers)
      : feed_(feed), files_(std::move(files)), byLine_(byLine), dtypes_(std::move(dtypes)),
        trainerId_(trainerId), trainers_(trainers) {
    for (const std::string &c : feed.columns())
      columns_.push_back(c);
    capacity_ = feed.shuffle() ? (feed.shuffle_buffer() > 0 ? feed.shuffle_buffer() : 65536) : 0;
    llvm::consumeError(rewind());
  }

  llvm::Error rewind() override {
    epoch_ = -1;
    pending_.reset();
    atEnd_ = false;
    // Trainers shuffle their shares differently, each the same way every run.
    rng_.seed(static_cast<uint64_t>(feed_.seed()) * 0x9e3779b97f4a7c15ULL + trainerId_);
    return llvm::Error::success();
  }

  bool atEpochEnd() const override { return atEnd_; }
  int64_t batchesPerEpoch() const override { return 0; }

  llvm::Expected<bool> next(std::vector<Tensor> &batch, int64_t &epoch) override {
    int64_t epochs = std::max<int64_t>(feed_.epochs(), 1);
    while (!pending_) { // the epoch is over (or not begun): start the next one
      if (epoch_ + 1 >= epochs)
        return false;
      startEpoch();
      if (llvm::Error err = fetchPending())
        return err;
      if (!pending_)
        return false; // this trainer has no rows at all
    }
    rows_.assign(1, *pending_);
    pending_.reset();
    while (static_cast<int64_t>(rows_.size()) < feed_.batch_size()) {
      CriteoRow row;
      auto got = pull(row);
      if (!got)
        return got.takeError();
      if (!*got)
        break;
      rows_.push_back(row);
    }
    // Look one row ahead, so atEpochEnd() is known with the epoch's last batch.
    if (llvm::Error err = fetchPending())
      return err;
    atEnd_ = !pending_;
    fill(batch);
    epoch = epoch_;
    return true;
  }

private:
  void startEpoch() {
    ++epoch_;
    fileIdx_ = 0;
    reader_.close();
    buffer_.clear();
    streamDone_ = false;
  }

  llvm::Error fetchPending() {
    CriteoRow row;
    auto got = pull(row);
    if (!got)
      return got.takeError();
    if (*got)
      pending_ = row;
    return llvm::Error::success();
  }

  /// The next row of this trainer's share in file order; false at the epoch's end.
  llvm::Expected<bool> readRow(CriteoRow &row) {
    for (;;) {
      if (!reader_.isOpen()) {
        if (fileIdx_ >= files_.size())
          return false;
        if (llvm::Error err = reader_.open(files_[fileIdx_]))
          return err;
        lineNo_ = 0;
      }
      llvm::StringRef line;
      auto got = reader_.next(line);
      if (!got)
        return got.takeError();
      ++lineNo_;
      if (!*got || (feed_.limit() > 0 && lineNo_ > feed_.limit())) {
        reader_.close();
        ++fileIdx_;
        continue;
      }
      if (byLine_ && (lineNo_ - 1) % trainers_ != trainerId_)
        continue;
      if (line.empty())
        continue;
      if (llvm::Error err = parseCriteoLine(line, row))
        return makeError("{0}:{1}: {2}", files_[fileIdx_], lineNo_, llvm::toString(std::move(err)));
      return true;
    }
  }

  /// The next row through the shuffle buffer: a random one of up to capacity_ rows read ahead.
  llvm::Expected<bool> pull(CriteoRow &row) {
    if (capacity_ == 0)
      return readRow(row);
    while (!streamDone_ && static_cast<int64_t>(buffer_.size()) < capacity_) {
      CriteoRow in;
      auto got = readRow(in);
      if (!got)
        return got.takeError();
      if (!*got)
        streamDone_ = true;
      else
        buffer_.push_back(in);
    }
    if (buffer_.empty())
      return false;
    size_t pick = rng_() % buffer_.size();
    row = buffer_[pick];
    buffer_[pick] = buffer_.back();
    buffer_.pop_back();
    return true;
  }

  template <typename T> static void put(Tensor &t, int64_t i, double v) { t.data<T>()[i] = T(v); }
  static void putNumber(Tensor &t, int64_t i, double v) {
    switch (t.dtype()) {
    case proto::F64:
      return put<double>(t, i, v);
    case proto::I64:
      return put<int64_t>(t, i, v);
    default:
      return put<float>(t, i, v);
    }
  }

  void fill(std::vector<Tensor> &batch) const {
    int64_t n = static_cast<int64_t>(rows_.size());
    batch.resize(3);
    for (int c = 0; c < 3; ++c)
      batch[c].resize(dtypes_[c], {n, kColumns[c].width}, /*zero=*/false);
    int64_t *keys = batch[2].data<int64_t>();
    for (int64_t r = 0; r < n; ++r) {
      const CriteoRow &row = rows_[r];
      putNumber(batch[0], r, row.label);
      for (int j = 0; j < kCriteoDense; ++j)
        putNumber(batch[1], r * kCriteoDense + j, row.dense[j]);
      for (int s = 0; s < kCriteoSlots; ++s)
        keys[r * kCriteoSlots + s] = static_cast<int64_t>(row.keys[s]);
    }
  }

  proto::DataFeed feed_;
  std::vector<std::string> files_; // this trainer's files
  bool byLine_;                    // one file shared by every trainer, split by lines
  std::vector<DType> dtypes_;      // of the label, dense and sparse columns
  int64_t trainerId_, trainers_, capacity_ = 0;
  int64_t epoch_ = -1, lineNo_ = 0;
  size_t fileIdx_ = 0;
  LineReader reader_;
  std::vector<CriteoRow> buffer_, rows_;
  bool streamDone_ = false, atEnd_ = false;
  std::optional<CriteoRow> pending_;
  std::mt19937_64 rng_;
};

} // namespace

llvm::Expected<std::unique_ptr<BatchSource>> openCriteoSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers) {
  if (feed.columns_size() != 3)
    return makeError("the criteo feed has {0} columns; it needs 3: label [B, 1], dense [B, 13] "
                     "and sparse [B, 26] vars",
                     feed.columns_size());
  std::vector<DType> dtypes;
  for (int c = 0; c < 3; ++c) {
    const ColumnSpec &spec = kColumns[c];
    const proto::Var *v = findVar(block, feed.columns(c));
    if (!v)
      return makeError("criteo feed column {0} is not a declared var", feed.columns(c));
    auto dims = dimsOf(v->type());
    if (dims.size() != 2 || (dims[1] != spec.width) ||
        !llvm::is_contained(spec.dtypes, v->type().dtype()))
      return makeError("criteo feed column {0} ({1}) is var {2} of {3}; it must be [B, {4}] of {5}",
                       c + 1, spec.role, v->name(), typeString(v->type()), spec.width,
                       spec.role == llvm::StringRef("sparse") ? "i64"
                       : spec.width == 1                      ? "f32, f64 or i64"
                                                              : "f32 or f64");
    dtypes.push_back(v->type().dtype());
  }
  if (feed.batch_size() <= 0)
    return makeError("data feed batch_size is {0}; it must be positive", feed.batch_size());
  if (trainers < 1 || trainerId < 0 || trainerId >= trainers)
    return makeError("trainer {0} of {1} does not exist", trainerId, trainers);
  int64_t numFiles = feed.files_size();
  if (numFiles == 0)
    return makeError("the criteo feed names no data files");
  if (numFiles > 1 && numFiles < trainers)
    return makeError("the criteo feed names {0} files for {1} trainers; give one file (trainers "
                     "take its lines in turn) or at least one file per trainer",
                     numFiles, trainers);
  std::vector<std::string> mine;
  for (int64_t f = numFiles > 1 ? trainerId : 0; f<numFiles; f += numFiles> 1 ? trainers : 1)
    mine.push_back(feed.files(f));
  for (const std::string &f : mine)
    if (!llvm::sys::fs::exists(f))
      return makeError("{0}: cannot open data file: no such file", f);
  return std::make_unique<CriteoSource>(feed, std::move(mine), numFiles == 1, std::move(dtypes),
                                        trainerId, trainers);
}

} // namespace oar
