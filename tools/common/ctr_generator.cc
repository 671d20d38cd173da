// oar-gen-ctr's generator: a seeded teacher and the Criteo-format lines drawn from it.
#include "tools/common/ctr_generator.h"
#include "tools/common/sampling.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>

#include "support/error.h"
#include "support/hash.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

namespace {

constexpr int kDense = 13, kMaxSlots = 26, kFmSlots = 8, kFmDim = 4;
constexpr double kPositiveRate = 0.25;
// Criteo Kaggle's cardinalities per slot, the largest capped at 10^6 values.
constexpr int64_t kSlotVocab[kMaxSlots] = {
    1460, 583,   1000000, 1000000, 305,  24,   12517, 633,     3,  93145, 5683,   1000000, 3194,
    27,   14992, 1000000, 10,      5652, 2173, 4,     1000000, 18, 15,    286181, 105,     142572};
// How often each slot is missing, roughly as in Criteo.
constexpr double kSlotMissing[kMaxSlots] = {0,    0,    0.03, 0.03, 0,    0.12, 0,    0,   0,
                                            0,    0,    0.03, 0,    0,    0,    0.03, 0,   0,
                                            0.44, 0.44, 0.03, 0,    0.76, 0.03, 0.44, 0.44};
constexpr double kDenseMissing[kDense] = {0.45, 0,    0.21, 0.22, 0.03, 0.22, 0.04,
                                          0,    0.04, 0.45, 0.04, 0.77, 0.22};
static_assert(std::size(kSlotVocab) == kMaxSlots && std::size(kSlotMissing) == kMaxSlots);
static_assert(std::size(kDenseMissing) == kDense);

/// One line's features; rank 0 is a missing categorical value, -1 a missing integer.
struct Line {
  int64_t dense[kDense];
  int64_t rank[kMaxSlots];
};

/// The planted model. Its parameters are hashes of (seed, role, slot, value), so nothing is
/// stored per value.
class Teacher {
public:
  explicit Teacher(const CtrGenOptions &opts) : opts_(opts) {
    for (int s = 0; s < opts.slots; ++s) {
      zipf_.emplace_back(kSlotVocab[s], opts.zipf);
      slotScale_[s] = 0.3 + 0.4 * unit(hashOf(opts.seed, 1, s));
      slotKey_[s] = static_cast<uint32_t>(hashOf(opts.seed, 2, s));
    }
    for (int j = 0; j < kDense; ++j) {
      denseMu_[j] = 4.0 * unit(hashOf(opts.seed, 3, j));
      denseWeight_[j] = 0.1 * gaussOf(hashOf(opts.seed, 4, j));
    }
    // Calibrate the bias on lines from a stream of its own for about 25% clicks.
    Rng calib{hashOf(opts.seed, 5)};
    std::vector<double> logits(20000);
    Line line;
    for (double &z : logits)
      z = logit(draw(calib, line));
    double lo = -30, hi = 30;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2, mean = 0;
      for (double z : logits)
        mean += 1.0 / (1.0 + std::exp(-(z + mid)));
      (mean / logits.size() < kPositiveRate ? lo : hi) = mid;
    }
    bias_ = (lo + hi) / 2;
  }

  /// Fills `line` from `rng` and returns it.
  const Line &draw(Rng &rng, Line &line) const {
    for (int j = 0; j < kDense; ++j)
      line.dense[j] = rng.uniform() < kDenseMissing[j]
                          ? -1
                          : static_cast<int64_t>(std::exp(denseMu_[j] + 1.5 * rng.normal()));
    for (int s = 0; s < kMaxSlots; ++s)
      line.rank[s] = s >= opts_.slots || rng.uniform() < kSlotMissing[s] ? 0 : zipf_[s].draw(rng);
    return line;
  }

  /// The click probability of a line.
  double probability(const Line &line) const {
    return 1.0 / (1.0 + std::exp(-logit(line) - bias_));
  }

  /// The 8 hex digits naming value `rank` of slot `s`: a bijection of the rank, so distinct
  /// values never share a name.
  uint32_t valueId(int s, int64_t rank) const {
    uint32_t x = static_cast<uint32_t>(rank) ^ slotKey_[s];
    x *= 0x9e3779b1u;
    x ^= x >> 15;
    x *= 0x85ebca77u;
    x ^= x >> 13;
    return x;
  }

private:
  /// Frequent values carry most of the signal, so a model that sees each a few times can learn it.
  /// With Zipf 1.1 about half the draws of a slot are values past rank 1000, each seen a few
  /// times in a million lines: a weight that decayed slowly (1/sqrt(1 + rank/200) at first) put a
  /// large share of the signal there, out of reach of any model trained on the file, and the
  /// teacher's AUC stopped being a bound a good model approaches.
  static double rankDecay(int64_t rank) { return 1.0 / (1.0 + rank / 30.0); }

  double logit(const Line &line) const {
    double z = 0;
    for (int j = 0; j < kDense; ++j)
      z += denseWeight_[j] * (line.dense[j] < 0 ? 0.0 : std::log1p(double(line.dense[j])));
    for (int s = 0; s < opts_.slots; ++s)
      z +=
          slotScale_[s] * rankDecay(line.rank[s]) * gaussOf(hashOf(opts_.seed, 6, s, line.rank[s]));
    // Factorisation machine over the first slots: sum over pairs of <e_a, e_b>.
    double sum[kFmDim] = {}, sumSq = 0;
    for (int s = 0; s < std::min<int>(opts_.slots, kFmSlots); ++s) {
      uint64_t h = hashOf(opts_.seed, 7, s, line.rank[s]);
      for (int d = 0; d < kFmDim; ++d) {
        double e = 0.25 * rankDecay(line.rank[s]) * gaussOf(mixKey(h + d));
        sum[d] += e;
        sumSq += e * e;
      }
    }
    double pairs = -sumSq;
    for (double v : sum)
      pairs += v * v;
    return z + 0.5 * pairs;
  }

  CtrGenOptions opts_;
  std::vector<ZipfSampler> zipf_;
  double slotScale_[kMaxSlots] = {}, denseMu_[kDense] = {}, denseWeight_[kDense] = {};
  uint32_t slotKey_[kMaxSlots] = {};
  double bias_ = 0;
};

/// Appends one Criteo line.
void formatLine(const Teacher &t, const Line &line, int label, std::string &out) {
  char buf[24];
  out += static_cast<char>('0' + label);
  for (int64_t v : line.dense) {
    out += '\t';
    if (v >= 0)
      out.append(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
  }
  static const char kHex[] = "0123456789abcdef";
  for (int s = 0; s < kMaxSlots; ++s) {
    out += '\t';
    if (line.rank[s] == 0)
      continue;
    uint32_t id = t.valueId(s, line.rank[s]);
    for (int i = 7; i >= 0; --i)
      out += kHex[(id >> (4 * i)) & 0xf];
  }
  out += '\n';
}

/// Writes `lines` lines drawn from `rng`; with `probs`, also each line's probability there
/// and its probability and label into the vectors.
llvm::Error writeLines(const Teacher &t, Rng rng, int64_t lines, const std::string &path,
                       const std::string *probPath, std::vector<double> *probs,
                       std::vector<uint8_t> *labels, int64_t &positives) {
  OutFile out, probOut;
  if (llvm::Error err = out.open(path))
    return err;
  if (probPath)
    if (llvm::Error err = probOut.open(*probPath))
      return err;
  std::string buf, probBuf;
  Line line;
  for (int64_t i = 0; i < lines; ++i) {
    t.draw(rng, line);
    double p = t.probability(line);
    int label = rng.uniform() < p;
    positives += label;
    formatLine(t, line, label, buf);
    if (probPath) {
      char num[32];
      probBuf.append(num,
                     std::to_chars(num, num + sizeof(num), p, std::chars_format::general, 9).ptr);
      probBuf += '\n';
      probs->push_back(p);
      labels->push_back(static_cast<uint8_t>(label));
    }
    if (buf.size() > (1 << 20) || i + 1 == lines) {
      out.write(buf);
      buf.clear();
      if (probPath) {
        probOut.write(probBuf);
        probBuf.clear();
      }
    }
  }
  if (llvm::Error err = out.close())
    return err;
  return probPath ? probOut.close() : llvm::Error::success();
}

} // namespace

llvm::Expected<CtrGenSummary> generateCtr(const CtrGenOptions &opts, llvm::StringRef dir) {
  if (opts.slots < 1 || opts.slots > kMaxSlots)
    return makeError("--slots={0}; Criteo lines have 1 to {1} categorical slots", opts.slots,
                     kMaxSlots);
  if (!(opts.zipf > 0))
    return makeError("--zipf={0}; the exponent must be positive (Criteo's values: about 1.1)",
                     opts.zipf);
  if (opts.trainLines < 0 || opts.testLines < 1)
    return makeError("--train-lines={0} --test-lines={1}; need at least one test line",
                     opts.trainLines, opts.testLines);
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  auto inDir = [&](const char *name) {
    llvm::SmallString<256> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  Teacher teacher(opts);
  CtrGenSummary sum;
  std::vector<double> probs;
  std::vector<uint8_t> labels;
  probs.reserve(opts.testLines);
  labels.reserve(opts.testLines);
  if (llvm::Error err =
          writeLines(teacher, Rng{hashOf(opts.seed, 8)}, opts.trainLines, inDir("train.txt"),
                     nullptr, nullptr, nullptr, sum.trainPositives))
    return err;
  std::string probPath = inDir("test.prob");
  if (llvm::Error err =
          writeLines(teacher, Rng{hashOf(opts.seed, 9)}, opts.testLines, inDir("test.txt"),
                     &probPath, &probs, &labels, sum.testPositives))
    return err;
  sum.teacherAuc = sortedScoreAuc(probs, labels);
  return sum;
}

double sortedScoreAuc(llvm::ArrayRef<double> scores, llvm::ArrayRef<uint8_t> labels) {
  assert(scores.size() == labels.size() && "one label per score");
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  // Sum of the positives' ranks (ties take their group's mean rank), Mann-Whitney U.
  double rankSum = 0, positives = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j < order.size() && scores[order[j]] == scores[order[i]])
      ++j;
    double meanRank = (i + 1 + j) / 2.0; // ranks i+1 .. j
    for (size_t k = i; k < j; ++k)
      if (labels[order[k]]) {
        rankSum += meanRank;
        positives += 1;
      }
    i = j;
  }
  double negatives = static_cast<double>(scores.size()) - positives;
  if (positives == 0 || negatives == 0)
    return 0;
  return (rankSum - positives * (positives + 1) / 2) / (positives * negatives);
}

} // namespace oar
