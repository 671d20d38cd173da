// Schemas from flags and files, their checks and their description.
#include "feed/schema.h"

#include <charconv>
#include <cmath>

#include "support/error.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"

namespace oar {

namespace {

/// The shortest text that reads back as `v` (35.2, not 35.20 or 35.200000000000003).
std::string numberText(double v) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end);
}

llvm::Expected<double> number(llvm::StringRef text, llvm::StringRef what) {
  double v;
  if (text.getAsDouble(v) || !std::isfinite(v))
    return makeError("{0} \"{1}\" is not a finite number", what, text);
  return v;
}

/// `name [transform [args...]]` of a dense column.
llvm::Expected<proto::FeedColumn> denseColumn(llvm::ArrayRef<llvm::StringRef> t) {
  proto::FeedColumn c;
  c.set_name(t[0].str());
  if (t.size() == 1)
    return c;
  llvm::StringRef transform = t[1];
  llvm::ArrayRef<llvm::StringRef> args = t.drop_front(2);
  c.set_transform(transform.str());
  if (transform == "log1p" && args.empty())
    return c;
  if (transform == "standardize" && args.empty()) { // oar computes the mean and std
    c.set_auto_stats(true);
    return c;
  }
  if (transform == "bucketize" && args.size() == 2 && args[0] == "auto") {
    int64_t n = 0;
    if (args[1].getAsInteger(10, n) || n < 2 || n > kMaxAutoBuckets)
      return makeError("dense column {0}: bucketize auto N takes a bucket count from 2 to {1}, "
                       "got \"{2}\"",
                       t[0], kMaxAutoBuckets, args[1]);
    c.set_auto_buckets(n);
    return c;
  }
  if (transform == "standardize" && args.size() == 2) {
    auto mean = number(args[0], "the mean of " + t[0].str());
    if (!mean)
      return mean.takeError();
    auto stdev = number(args[1], "the std of " + t[0].str());
    if (!stdev)
      return stdev.takeError();
    c.set_mean(*mean);
    c.set_std(*stdev);
    return c;
  }
  if (transform == "bucketize" && !args.empty()) {
    for (llvm::StringRef a : args) {
      auto b = number(a, "a boundary of " + t[0].str());
      if (!b)
        return b.takeError();
      c.add_boundaries(*b);
    }
    return c;
  }
  return makeError("dense column {0}: \"{1}\" with {2} argument(s) is no transform (use log1p, "
                   "standardize [MEAN STD], bucketize B1 B2 ... or bucketize auto N)",
                   t[0], transform, args.size());
}

/// `name [int] [multi N [sum|mean] [sep C]]` of a sparse column.
llvm::Expected<proto::FeedColumn> sparseColumn(llvm::ArrayRef<llvm::StringRef> t) {
  proto::FeedColumn c;
  c.set_name(t[0].str());
  for (size_t i = 1; i < t.size(); ++i) {
    int64_t n = 0;
    if (t[i] == "int") {
      c.set_integer_ids(true);
    } else if (t[i] == "multi" && i + 1 < t.size() && !t[i + 1].getAsInteger(10, n) && n >= 1) {
      c.set_max_values(n);
      ++i;
    } else if ((t[i] == "sum" || t[i] == "mean") && c.max_values() > 0) {
      c.set_pooling(t[i].str());
    } else if (t[i] == "sep" && i + 1 < t.size() && t[i + 1].size() == 1) {
      c.set_separator(t[++i].str());
    } else if (t[i].startswith("sep=") && t[i].size() == 5) {
      c.set_separator(t[i].substr(4).str());
    } else {
      return makeError("sparse column {0}: \"{1}\" is not an option (int; multi N with a positive "
                       "N, then sum or mean; sep C with one character)",
                       t[0], t[i]);
    }
  }
  if (!c.separator().empty() && c.max_values() == 0)
    return makeError("sparse column {0}: a separator splits multi-valued cells; declare it multi N",
                     t[0]);
  return c;
}

/// `a*b[*c...]` and options (`deep`) of a crossed column.
llvm::Expected<proto::FeedCross> crossColumn(llvm::ArrayRef<llvm::StringRef> t) {
  proto::FeedCross c;
  c.set_name(t[0].str());
  llvm::SmallVector<llvm::StringRef, 4> parts;
  t[0].split(parts, '*');
  if (parts.size() < 2 || llvm::is_contained(parts, ""))
    return makeError("cross \"{0}\" names no columns to cross: write A*B (or A*B*C)", t[0]);
  for (llvm::StringRef p : parts)
    c.add_columns(p.str());
  for (llvm::StringRef option : t.drop_front()) {
    if (option != "deep")
      return makeError("cross {0}: \"{1}\" is not an option (deep: the deep part embeds it too)",
                       t[0], option);
    c.set_deep(true);
  }
  return c;
}

/// `name [positive=V] [negative=V]` (flags) or `name positive V [negative V]` (a file): a label
/// given by value.
llvm::Error labelByValue(proto::FeedSchema &s, llvm::ArrayRef<llvm::StringRef> options) {
  for (size_t i = 0; i < options.size(); ++i) {
    auto [key, value] = options[i].split('=');
    if (value.empty() && !options[i].contains('=') && i + 1 < options.size())
      value = options[++i];
    if (value.empty() || (key != "positive" && key != "negative"))
      return makeError("label {0}: \"{1}\" is not an option (positive=VALUE, negative=VALUE)",
                       s.label(), options[i]);
    (key == "positive" ? s.mutable_label_positive() : s.mutable_label_negative())->assign(value);
  }
  if (!s.label_negative().empty() && s.label_positive().empty())
    return makeError("label {0}: a negative value needs the positive one too (positive=VALUE)",
                     s.label());
  if (!s.label_positive().empty() && s.label_positive() == s.label_negative())
    return makeError("label {0}: positive and negative are both \"{1}\"", s.label(),
                     s.label_positive());
  return llvm::Error::success();
}

/// Entries of a comma-separated flag, each split on ':'.
llvm::Error eachEntry(llvm::StringRef flag, llvm::StringRef list,
                      llvm::function_ref<llvm::Error(llvm::ArrayRef<llvm::StringRef>)> add) {
  llvm::SmallVector<llvm::StringRef, 16> entries;
  list.split(entries, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef e : entries) {
    llvm::SmallVector<llvm::StringRef, 8> tokens;
    e.trim().split(tokens, ':');
    if (tokens[0].empty())
      return makeError("--{0}: entry \"{1}\" has no column name", flag, e);
    if (llvm::Error err = add(tokens))
      return makeError("--{0}: {1}", flag, llvm::toString(std::move(err)));
  }
  return llvm::Error::success();
}

} // namespace

llvm::Expected<proto::FeedSchema> schemaFromFlags(llvm::StringRef label, llvm::StringRef dense,
                                                  llvm::StringRef sparse, llvm::StringRef cross) {
  proto::FeedSchema s;
  llvm::SmallVector<llvm::StringRef, 4> labelParts;
  label.trim().split(labelParts, ':');
  s.set_label(labelParts[0].str());
  if (llvm::Error err =
          labelByValue(s, llvm::ArrayRef<llvm::StringRef>(labelParts).drop_front()))
    return makeError("--label: {0}", llvm::toString(std::move(err)));
  if (llvm::Error err = eachEntry("dense", dense, [&](auto t) -> llvm::Error {
        auto c = denseColumn(t);
        if (!c)
          return c.takeError();
        *s.add_dense() = std::move(*c);
        return llvm::Error::success();
      }))
    return err;
  if (llvm::Error err = eachEntry("sparse", sparse, [&](auto t) -> llvm::Error {
        auto c = sparseColumn(t);
        if (!c)
          return c.takeError();
        *s.add_sparse() = std::move(*c);
        return llvm::Error::success();
      }))
    return err;
  if (llvm::Error err = eachEntry("cross", cross, [&](auto t) -> llvm::Error {
        auto c = crossColumn(t);
        if (!c)
          return c.takeError();
        *s.add_cross() = std::move(*c);
        return llvm::Error::success();
      }))
    return err;
  if (llvm::Error err = checkSchema(s))
    return err;
  return s;
}

llvm::Expected<proto::FeedSchema> readSchemaFile(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buf)
    return makeError("{0}: cannot read the schema: {1}", path, buf.getError().message());
  proto::FeedSchema s;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  (*buf)->getBuffer().split(lines, '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    llvm::StringRef line = lines[i].split('#').first.trim();
    if (line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 8> t;
    line.split(t, ' ', -1, /*KeepEmpty=*/false);
    auto at = [&](const llvm::Twine &why) { return makeError("{0}:{1}: {2}", path, i + 1, why); };
    if (t.size() < 2)
      return at("\"" + line + "\" declares no column: write label NAME, dense NAME [TRANSFORM] "
                              "or sparse NAME [int]");
    llvm::ArrayRef<llvm::StringRef> rest = llvm::ArrayRef<llvm::StringRef>(t).drop_front();
    if (t[0] == "label") {
      if (!s.label().empty())
        return at("a second label (" + t[1] + "); the first was " + s.label());
      s.set_label(t[1].str());
      if (t.size() == 3 && (t[2] == "binary" || t[2] == "real"))
        s.set_label_kind(t[2].str());
      else if (t.size() == 4 && t[2] == "classes")
        s.set_label_kind(("classes:" + t[3]).str());
      else if (t.size() > 2 && (t[2] == "positive" || t[2].startswith("positive="))) {
        if (llvm::Error err = labelByValue(s, llvm::ArrayRef<llvm::StringRef>(t).drop_front(2)))
          return at(llvm::toString(std::move(err)));
      } else if (t.size() != 2)
        return at("label " + t[1] + ": \"" + llvm::join(t.begin() + 2, t.end(), " ") +
                  "\" is no label kind (use binary, real or classes N)");
      continue;
    }
    if (t[0] == "cross") {
      auto c = crossColumn(rest);
      if (!c)
        return at(llvm::toString(c.takeError()));
      *s.add_cross() = std::move(*c);
      continue;
    }
    llvm::Expected<proto::FeedColumn> c = t[0] == "dense"    ? denseColumn(rest)
                                          : t[0] == "sparse" ? sparseColumn(rest)
                                                             : makeError("\"{0}\" is no column "
                                                                         "kind (use label, dense, "
                                                                         "sparse or cross)",
                                                                         t[0]);
    if (!c)
      return at(llvm::toString(c.takeError()));
    *(t[0] == "dense" ? s.add_dense() : s.add_sparse()) = std::move(*c);
  }
  if (llvm::Error err = checkSchema(s))
    return makeError("{0}: {1}", path, llvm::toString(std::move(err)));
  return s;
}

int64_t labelClasses(const proto::FeedSchema &schema) {
  llvm::StringRef kind = schema.label_kind();
  int64_t n = 0;
  if (kind.consume_front("classes:") && !kind.getAsInteger(10, n))
    return n;
  return 0;
}

namespace {

/// Each cross: two or more declared sparse or bucketized columns, at most one multi-valued, a
/// name of its own.
llvm::Error checkCrosses(const proto::FeedSchema &s) {
  llvm::StringMap<const proto::FeedColumn *> keyed;
  for (const proto::FeedColumn &c : s.sparse())
    keyed[c.name()] = &c;
  for (const proto::FeedColumn &c : s.dense())
    if (c.transform() == "bucketize")
      keyed[c.name()] = &c;
  llvm::StringSet<> crosses;
  for (const proto::FeedCross &x : s.cross()) {
    if (!crosses.insert(x.name()).second)
      return makeError("cross {0} is declared twice", x.name());
    if (x.columns_size() < 2)
      return makeError("cross {0} crosses {1} column(s); a cross takes two or more", x.name(),
                       x.columns_size());
    int multi = 0;
    llvm::StringSet<> parts;
    for (const std::string &name : x.columns()) {
      if (!parts.insert(name).second)
        return makeError("cross {0} names column {1} twice", x.name(), name);
      auto it = keyed.find(name);
      if (it == keyed.end())
        return makeError("cross {0}: {1} is no sparse or bucketized column of the schema (declare "
                         "it with --sparse, or --dense {1}:bucketize...)",
                         x.name(), name);
      multi += it->second->max_values() > 0;
    }
    if (multi > 1)
      return makeError("cross {0} crosses {1} multi-valued columns; at most one may be", x.name(),
                       multi);
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error checkSchema(const proto::FeedSchema &s) {
  if (s.label().empty())
    return makeError("the schema names no label column (--label NAME)");
  llvm::StringRef kind = s.label_kind();
  if (!kind.empty() && kind != "binary" && kind != "real" && labelClasses(s) < 2)
    return makeError("label kind \"{0}\" is none of binary, real, classes:N (N >= 2)", kind);
  if (s.dense_size() + s.sparse_size() == 0)
    return makeError("the schema has no feature columns (--dense, --sparse)");
  llvm::StringSet<> names;
  names.insert(s.label());
  for (const auto *list : {&s.dense(), &s.sparse()})
    for (const proto::FeedColumn &c : *list)
      if (!names.insert(c.name()).second)
        return makeError("column {0} is declared twice in the schema (label, dense and sparse "
                         "columns each read a column once)",
                         c.name());
  for (const proto::FeedCross &x : s.cross())
    if (names.count(x.name()))
      return makeError("cross {0} has the name of a column", x.name());
  if (llvm::Error err = checkCrosses(s))
    return err;
  for (const proto::FeedColumn &c : s.dense()) {
    if (c.transform() == "standardize" && !c.auto_stats() && !(c.std() > 0))
      return makeError("dense column {0}: standardize needs a positive std, got {1}", c.name(),
                       numberText(c.std()));
    for (int i = 1; i < c.boundaries_size(); ++i)
      if (!(c.boundaries(i - 1) < c.boundaries(i)))
        return makeError("dense column {0}: bucketize boundaries must ascend ({1} then {2})",
                         c.name(), numberText(c.boundaries(i - 1)), numberText(c.boundaries(i)));
    if (!c.transform().empty() && c.transform() != "log1p" && c.transform() != "standardize" &&
        c.transform() != "bucketize")
      return makeError("dense column {0}: unknown transform \"{1}\"", c.name(), c.transform());
  }
  return llvm::Error::success();
}

int64_t denseWidth(const proto::FeedSchema &schema) {
  return llvm::count_if(schema.dense(),
                        [](const proto::FeedColumn &c) { return c.transform() != "bucketize"; });
}

int64_t slotCount(const proto::FeedSchema &schema) {
  return static_cast<int64_t>(keySections(schema).size());
}

int64_t keyWidth(const proto::FeedSchema &schema) {
  int64_t width = 0;
  for (const KeySection &k : keySections(schema))
    width += k.width;
  return width;
}

int64_t crossWidth(const proto::FeedSchema &schema, const proto::FeedCross &cross) {
  for (const proto::FeedColumn &c : schema.sparse())
    if (c.max_values() > 0 && llvm::is_contained(cross.columns(), c.name()))
      return c.max_values();
  return 1;
}

std::vector<KeySection> keySections(const proto::FeedSchema &schema) {
  std::vector<KeySection> out;
  for (const proto::FeedColumn &c : schema.sparse())
    if (c.max_values() == 0)
      out.push_back({c.name(), 1, false, true});
  for (const proto::FeedColumn &c : schema.dense())
    if (c.transform() == "bucketize")
      out.push_back({c.name(), 1, false, true});
  for (const proto::FeedColumn &c : schema.sparse())
    if (c.max_values() > 0)
      out.push_back({c.name(), c.max_values(), true, true});
  for (bool multi : {false, true})
    for (const proto::FeedCross &x : schema.cross())
      if (crossIsMulti(schema, x) == multi)
        out.push_back({x.name(), crossWidth(schema, x), multi, x.deep()});
  return out;
}

bool crossIsMulti(const proto::FeedSchema &schema, const proto::FeedCross &cross) {
  return llvm::any_of(schema.sparse(), [&](const proto::FeedColumn &c) {
    return c.max_values() > 0 && llvm::is_contained(cross.columns(), c.name());
  });
}

bool hasAutoStatistics(const proto::FeedSchema &schema) {
  return llvm::any_of(schema.dense(), [](const proto::FeedColumn &c) {
    return c.auto_stats() || c.auto_buckets() > 0;
  });
}

bool hasMultiValued(const proto::FeedSchema &schema) {
  return llvm::any_of(schema.sparse(), [](const proto::FeedColumn &c) { return c.max_values() > 0; });
}

std::string describeSchema(const proto::FeedSchema &s) {
  std::string out = "label " + s.label();
  if (labelClasses(s))
    out += " classes " + std::to_string(labelClasses(s));
  else if (!s.label_kind().empty())
    out += " " + s.label_kind();
  if (!s.label_positive().empty())
    out += " positive " + s.label_positive();
  if (!s.label_negative().empty())
    out += " negative " + s.label_negative();
  out += "\n";
  for (const proto::FeedColumn &c : s.dense()) {
    out += "dense " + c.name();
    if (!c.transform().empty())
      out += " " + c.transform();
    if (c.auto_buckets() > 0)
      out += " auto " + std::to_string(c.auto_buckets());
    if (c.transform() == "standardize" && !c.auto_stats())
      out += " " + numberText(c.mean()) + " " + numberText(c.std());
    for (double b : c.boundaries())
      out += " " + numberText(b);
    out += "\n";
  }
  for (const proto::FeedColumn &c : s.sparse()) {
    out += "sparse " + c.name() + (c.integer_ids() ? " int" : "");
    if (c.max_values() > 0)
      out += " multi " + std::to_string(c.max_values()) + " " +
             (c.pooling().empty() ? "sum" : c.pooling());
    if (!c.separator().empty())
      out += " sep " + c.separator();
    out += "\n";
  }
  for (const proto::FeedCross &x : s.cross())
    out += "cross " + x.name() + (x.deep() ? " deep" : "") + "\n";
  return out;
}

} // namespace oar
