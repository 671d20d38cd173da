// The criteo data feed: line parsing, per-slot key hashing, and its rows streamed as every text
// feed's are (feed/stream_source.h).
#include "executor/criteo_feed.h"

#include <cmath>

#include "feed/stream_source.h"
#include "ir/error.h"

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
  StreamLayout layout;
  layout.denseWidth = kCriteoDense, layout.slots = kCriteoSlots;
  layout.dtypes = std::move(dtypes);
  layout.makeParser = []() -> llvm::Expected<std::unique_ptr<RowParser>> {
    return std::make_unique<CriteoParser>();
  };
  return openStreamSource(feed, std::move(layout), trainerId, trainers);
}

} // namespace oar
