// A click log of a user's own, as the schema feeds' tests and benches need one: columns user,
// item, cat (string ids), hour (an integer id), price (a real number) and clicked, drawn from a
// planted logistic rule, written in every format oar reads.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace oar {

struct ClickRow {
  std::string user, item, cat;
  int64_t hour = 0;
  double price = 0;
  int clicked = 0;
};

/// `rows` rows from `seed`: the same seed gives the same rows. The rule: a weight per user, item
/// and category, an effect per hour, and -0.6 * log(1 + price), through a logistic link.
std::vector<ClickRow> clickRows(int64_t rows, uint64_t seed);

/// The rows as a file of `format`:
///   csv, tsv   a header, then the columns in `order` (names; default user,item,cat,hour,price,clicked)
///   slot       `clicked:1 user:u17 item:it9 cat:c3 hour:14 price:20.5`
///   libffm     `1 0:17:1 1:9:1 2:3:1 3:14:1 4:0:20.5` (fields 0..4: user, item, cat, hour,
///              price; ids by their number)
///   libsvm     `1 18:1 3010:1 4004:1 5015:1 9999:20.5` (user, item, cat, hour in one space of
///              indices; 9999 the price)
///   criteo     Criteo's layout: label, price in cents as I1, I2..I13 empty, C1..C4 the ids, the
///              rest empty
void writeClickLog(const std::vector<ClickRow> &rows, const std::string &format,
                   const std::string &path, std::vector<std::string> order = {});

/// The schema flags that read writeClickLog's files: oar-model's --label, --dense and --sparse.
std::string clickLogColumns(const std::string &format);

} // namespace oar
