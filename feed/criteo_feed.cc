// The criteo data feed: line parsing, per-slot key hashing, and its rows streamed as every text
// feed's are (feed/stream_source.h).
#include "feed/criteo_feed.h"

#include <cmath>

#include "feed/stream_source.h"
#include "support/error.h"
#include "support/hash.h"

namespace oar {

uint64_t criteoKey(int slot, llvm::StringRef value) {
  // FNV-1a from a per-slot basis, then splitmix64's finaliser to spread the bits.
  uint64_t basis = kFnvBasis ^ (static_cast<uint64_t>(slot + 1) * kGoldenGamma);
  return mixKey(fnv1a64(value, basis)) >> 1; // 63 bits: non-negative as an i64
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
const FeedVarSpec kCriteoVars[] = {
    {"label", 1, {proto::F32, proto::F64, proto::I64}, "f32, f64 or i64"},
    {"dense", kCriteoDense, {proto::F32, proto::F64}, "f32 or f64"},
    {"sparse", kCriteoSlots, {proto::I64}, "i64"}};

/// A Criteo line into a row of label, 13 dense values and 26 keys.
class CriteoParser : public RowParser {
public:
  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    CriteoRow row;
    if (llvm::Error err = parseCriteoLine(line, row))
      return err;
    rows.label(r) = row.label;
    std::copy_n(row.dense, kCriteoDense, rows.dense(r));
    std::copy_n(row.keys, kCriteoSlots, rows.keys(r));
    return llvm::Error::success();
  }
};

} // namespace

llvm::Expected<std::unique_ptr<BatchSource>> openCriteoSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers) {
  auto dtypes = checkFeedVars(feed, block, kCriteoVars);
  if (!dtypes)
    return dtypes.takeError();
  StreamLayout layout;
  layout.denseWidth = kCriteoDense, layout.slots = kCriteoSlots;
  layout.dtypes = std::move(*dtypes);
  layout.makeParser = []() -> llvm::Expected<std::unique_ptr<RowParser>> {
    return std::make_unique<CriteoParser>();
  };
  return openStreamSource(feed, std::move(layout), trainerId, trainers);
}

} // namespace oar
