// oar-gen-ctr --layout=clicklog: the planted model and the csv lines drawn from it.
#include "tools/common/click_log_generator.h"

#include <charconv>
#include <vector>

#include "tools/common/ctr_generator.h"
#include "tools/common/sampling.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

constexpr int kTastes = 3, kMaxRecent = 5, kPriceBands = 8;
constexpr double kPositiveRate = 0.15;
const char *const kDevices[] = {"ios", "android", "web", "tablet"};
constexpr double kDeviceShare[] = {0.40, 0.35, 0.20, 0.05};

/// One row before it is written.
struct Row {
  int64_t userRank = 0, itemRank = 0, cat = 0, hour = 0, device = 0, day = 0;
  double price = 0;
  int64_t recent[kMaxRecent] = {};
  int recentCount = 0;
};

class ClickTeacher {
public:
  explicit ClickTeacher(const ClickLogOptions &o)
      : o_(o), users_(o.users, o.zipf), itemsPerCat_(std::max<int64_t>(o.items / o.categories, 1)),
        itemsInCat_(itemsPerCat_, o.zipf), cats_(o.categories, 0.8) {
    Rng calib{hashOf(o.seed, 90)};
    std::vector<double> logits;
    Row row;
    for (int i = 0; i < 20000; ++i)
      logits.push_back(logit(draw(calib, i % (o.trainLines + 1), row)));
    double lo = -30, hi = 30;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2, mean = 0;
      for (double z : logits)
        mean += 1.0 / (1.0 + std::exp(-(z + mid)));
      (mean / logits.size() < kPositiveRate ? lo : hi) = mid;
    }
    bias_ = (lo + hi) / 2;
  }

  /// Row `t` (its time: the day and hour follow from it) drawn from `rng`.
  const Row &draw(Rng &rng, int64_t t, Row &row) const {
    int64_t total = o_.trainLines + o_.testLines;
    double dayAt = double(t) * double(o_.days) / double(total);
    row.day = static_cast<int64_t>(dayAt);
    row.hour = std::min<int64_t>(static_cast<int64_t>((dayAt - row.day) * 24), 23);
    row.userRank = users_.draw(rng);
    // Users mostly browse their own tastes; otherwise what is popular.
    row.cat = rng.uniform() < 0.4 ? taste(row.userRank, rng.next() % kTastes) : cats_.draw(rng) - 1;
    row.itemRank = itemsInCat_.draw(rng);
    double u = rng.uniform();
    for (row.device = 0; row.device < 3 && u >= kDeviceShare[row.device]; ++row.device)
      u -= kDeviceShare[row.device];
    // An item's price: its own level (log-normal about its category's) and a little noise.
    uint64_t item = itemKey(row);
    double level = 2.5 + 1.0 * unit(hashOf(o_.seed, 91, row.cat)) + 0.7 * gaussOf(hashOf(item, 92));
    row.price = std::round(std::exp(level + 0.1 * rng.normal()) * 100) / 100;
    row.recentCount = 1 + static_cast<int>(rng.next() % kMaxRecent);
    int n = 0;
    for (int i = 0; i < row.recentCount; ++i) {
      int64_t c = rng.uniform() < 0.7 ? taste(row.userRank, rng.next() % kTastes)
                                      : cats_.draw(rng) - 1;
      if (std::find(row.recent, row.recent + n, c) == row.recent + n)
        row.recent[n++] = c;
    }
    row.recentCount = n;
    return row;
  }

  double probability(const Row &row) const {
    return 1.0 / (1.0 + std::exp(-logit(row) - bias_));
  }

  uint64_t userKey(int64_t rank) const { return hashOf(o_.seed, 93, rank) >> 24; }
  uint64_t itemKey(const Row &row) const { return hashOf(o_.seed, 94, row.cat, row.itemRank) >> 24; }

private:
  int64_t taste(int64_t userRank, uint64_t j) const {
    return static_cast<int64_t>(hashOf(o_.seed, 95, userRank, j) % uint64_t(o_.categories));
  }
  /// Frequent ids carry their effect; one seen twice in the log cannot be learned, and would
  /// make the best AUC a bound no model approaches.
  static double decay(int64_t rank) { return 1.0 / (1.0 + rank / 50.0); }

  double logit(const Row &row) const {
    double z = 0.6 * decay(row.userRank) * gaussOf(hashOf(o_.seed, 96, row.userRank));
    z += 0.6 * decay(row.itemRank) * gaussOf(hashOf(o_.seed, 97, row.cat, row.itemRank));
    z += 0.3 * gaussOf(hashOf(o_.seed, 98, row.cat));
    z += 0.15 * gaussOf(hashOf(o_.seed, 99, row.device));
    // A category's clicks depend on the hour (games at night, office goods by day).
    z += 0.6 * gaussOf(hashOf(o_.seed, 100, row.cat, row.hour / 3));
    // Each category has a price band that sells: a cross of the category and the price's band.
    int64_t band = std::clamp<int64_t>(static_cast<int64_t>((std::log(row.price) - 1.5) * 2.0), 0,
                                       kPriceBands - 1);
    z += 0.6 * gaussOf(hashOf(o_.seed, 101, row.cat, band));
    // The user looked at this category lately.
    if (std::find(row.recent, row.recent + row.recentCount, row.cat) != row.recent + row.recentCount)
      z += 0.9;
    // Drift: tastes move a little day by day.
    z += 0.2 * std::sin(0.7 * double(row.day)) * gaussOf(hashOf(o_.seed, 102, row.cat));
    return z;
  }

  ClickLogOptions o_;
  ZipfSampler users_;
  int64_t itemsPerCat_;
  ZipfSampler itemsInCat_, cats_;
  double bias_ = 0;
};

void appendNumber(std::string &out, int64_t v) {
  char buf[24];
  out.append(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

void formatRow(const ClickTeacher &t, const Row &row, int label, std::string &out) {
  char buf[32];
  out += static_cast<char>('0' + label);
  out += ",u";
  appendNumber(out, static_cast<int64_t>(t.userKey(row.userRank)));
  out += ",i";
  appendNumber(out, static_cast<int64_t>(t.itemKey(row)));
  out += ",c";
  appendNumber(out, row.cat);
  out += ',';
  appendNumber(out, row.hour);
  out += ',';
  out += kDevices[row.device];
  out += ',';
  out.append(buf, std::to_chars(buf, buf + sizeof buf, row.price, std::chars_format::fixed, 2).ptr);
  out += ',';
  for (int i = 0; i < row.recentCount; ++i) {
    out += i ? "|c" : "c";
    appendNumber(out, row.recent[i]);
  }
  out += '\n';
}

} // namespace

llvm::Expected<ClickLogSummary> generateClickLog(const ClickLogOptions &o, llvm::StringRef dir) {
  if (o.users < 1 || o.items < o.categories || o.categories < 2 || o.days < 1 || !(o.zipf > 0))
    return makeError("--users={0} --items={1} --categories={2}: need users >= 1, categories >= 2 "
                     "and at least an item per category (and a positive --zipf)",
                     o.users, o.items, o.categories);
  if (o.trainLines < 1 || o.testLines < 1)
    return makeError("--train-lines={0} --test-lines={1}: need a line in each", o.trainLines,
                     o.testLines);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  auto inDir = [&](const char *name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  ClickTeacher teacher(o);
  ClickLogSummary sum;
  std::vector<double> probs;
  std::vector<uint8_t> labels;
  Rng rng{hashOf(o.seed, 103)};
  Row row;
  int64_t t = 0;
  for (bool test : {false, true}) {
    OutFile out, probOut;
    if (llvm::Error err = out.open(inDir(test ? "test.csv" : "train.csv")))
      return err;
    if (test)
      if (llvm::Error err = probOut.open(inDir("test.prob")))
        return err;
    std::string buf = "clicked,user,item,cat,hour,device,price,recent\n", probBuf;
    int64_t lines = test ? o.testLines : o.trainLines;
    for (int64_t i = 0; i < lines; ++i, ++t) {
      double p = teacher.probability(teacher.draw(rng, t, row));
      int label = rng.uniform() < p;
      (test ? sum.testPositives : sum.trainPositives) += label;
      formatRow(teacher, row, label, buf);
      if (test) {
        char num[32];
        probBuf.append(num,
                       std::to_chars(num, num + sizeof num, p, std::chars_format::general, 9).ptr);
        probBuf += '\n';
        probs.push_back(p);
        labels.push_back(static_cast<uint8_t>(label));
      }
      if (buf.size() > (1 << 20) || i + 1 == lines) {
        out.write(buf);
        buf.clear();
        if (test) {
          probOut.write(probBuf);
          probBuf.clear();
        }
      }
    }
    if (llvm::Error err = out.close())
      return err;
    if (test)
      if (llvm::Error err = probOut.close())
        return err;
  }
  sum.teacherAuc = sortedScoreAuc(probs, labels);
  return sum;
}

} // namespace oar
