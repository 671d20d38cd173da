// The planted rule and the writers.
#include "test/helpers/click_log.h"

#include <cmath>
#include <fstream>
#include <random>

#include "llvm/Support/FormatVariadic.h"

namespace oar {

namespace {

/// A uniform double in [0, 1) from the generator's bits: the same on every machine (the
/// standard distributions are not).
double uniform(std::mt19937_64 &rng) { return double(rng() >> 11) * 0x1.0p-53; }

double normal(std::mt19937_64 &rng) { // Box-Muller
  double u = std::max(uniform(rng), 1e-300), v = uniform(rng);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

/// A skewed id in [0, n): small ids are frequent, as users and items of a real log are.
int64_t skewed(std::mt19937_64 &rng, int64_t n) {
  return std::min<int64_t>(n - 1, int64_t(std::pow(uniform(rng), 2.5) * double(n)));
}

std::string priceText(double price) { return llvm::formatv("{0:f2}", price).str(); }

} // namespace

std::vector<ClickRow> clickRows(int64_t n, uint64_t seed) {
  constexpr int64_t kUsers = 2000, kItems = 800, kCats = 30;
  std::mt19937_64 teacher(0x5eed);
  std::vector<double> wUser(kUsers), wItem(kItems), wCat(kCats), wHour(24);
  for (double &w : wUser)
    w = 0.8 * normal(teacher);
  for (double &w : wItem)
    w = 0.8 * normal(teacher);
  for (double &w : wCat)
    w = 0.5 * normal(teacher);
  for (int h = 0; h < 24; ++h)
    wHour[h] = 0.6 * std::sin(h * M_PI / 12);
  std::mt19937_64 rng(seed);
  std::vector<ClickRow> rows(n);
  for (ClickRow &r : rows) {
    int64_t u = skewed(rng, kUsers), it = skewed(rng, kItems), c = it % kCats;
    r.user = "u" + std::to_string(u);
    r.item = "it" + std::to_string(it);
    r.cat = "c" + std::to_string(c);
    r.hour = int64_t(uniform(rng) * 24);
    r.price = std::round(std::exp(2.5 + normal(rng)) * 100) / 100;
    double logit = -0.4 + wUser[u] + wItem[it] + wCat[c] + wHour[r.hour] -
                   0.6 * std::log1p(r.price) + 1.0;
    r.clicked = uniform(rng) < 1 / (1 + std::exp(-logit)) ? 1 : 0;
  }
  return rows;
}

void writeClickLog(const std::vector<ClickRow> &rows, const std::string &format,
                   const std::string &path, std::vector<std::string> order) {
  std::ofstream out(path);
  if (format == "csv" || format == "tsv") {
    if (order.empty())
      order = {"user", "item", "cat", "hour", "price", "clicked"};
    char sep = format == "csv" ? ',' : '\t';
    for (size_t i = 0; i < order.size(); ++i)
      out << (i ? std::string(1, sep) : "") << order[i];
    out << "\n";
    for (const ClickRow &r : rows) {
      for (size_t i = 0; i < order.size(); ++i) {
        const std::string &c = order[i];
        out << (i ? std::string(1, sep) : "");
        out << (c == "user"    ? r.user
                : c == "item"  ? r.item
                : c == "cat"   ? r.cat
                : c == "hour"  ? std::to_string(r.hour)
                : c == "price" ? priceText(r.price)
                               : std::to_string(r.clicked));
      }
      out << "\n";
    }
  } else if (format == "slot") {
    for (const ClickRow &r : rows)
      out << "clicked:" << r.clicked << " user:" << r.user << " item:" << r.item
          << " cat:" << r.cat << " hour:" << r.hour << " price:" << priceText(r.price) << "\n";
  } else if (format == "libffm") {
    for (const ClickRow &r : rows)
      out << r.clicked << " 0:" << r.user.substr(1) << ":1 1:" << r.item.substr(2) << ":1 2:"
          << r.cat.substr(1) << ":1 3:" << r.hour << ":1 4:0:" << priceText(r.price) << "\n";
  } else if (format == "libsvm") { // one space of indices: user, item, cat, hour; the price
    for (const ClickRow &r : rows)
      out << r.clicked << " " << 1 + std::stoll(r.user.substr(1)) << ":1 "
          << 3001 + std::stoll(r.item.substr(2)) << ":1 " << 4001 + std::stoll(r.cat.substr(1))
          << ":1 " << 5001 + r.hour << ":1 9999:" << priceText(r.price) << "\n";
  } else { // criteo
    for (const ClickRow &r : rows) {
      out << r.clicked << "\t" << int64_t(std::llround(r.price * 100));
      for (int i = 2; i <= 13; ++i)
        out << "\t";
      out << "\t" << r.user << "\t" << r.item << "\t" << r.cat << "\t" << r.hour;
      for (int i = 5; i <= 26; ++i)
        out << "\t";
      out << "\n";
    }
  }
}

std::string clickLogColumns(const std::string &format) {
  if (format == "libffm")
    return "--sparse=0,1,2,3 --dense=4:log1p";
  if (format == "libsvm")
    return "--sparse=features:multi:4 --dense=9999:log1p";
  return "--label=clicked --sparse=user,item,cat,hour:int --dense=price:log1p";
}

} // namespace oar
