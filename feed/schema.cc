// Schemas from flags and files, their checks and their description.
#include "feed/schema.h"

#include <charconv>
#include <cmath>

#include "support/error.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
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
                   "standardize MEAN STD or bucketize B1 B2 ...)",
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
                                                  llvm::StringRef sparse) {
  proto::FeedSchema s;
  s.set_label(label.trim().str());
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
      else if (t.size() != 2)
        return at("label " + t[1] + ": \"" + llvm::join(t.begin() + 2, t.end(), " ") +
                  "\" is no label kind (use binary, real or classes N)");
      continue;
    }
    llvm::Expected<proto::FeedColumn> c = t[0] == "dense"    ? denseColumn(rest)
                                          : t[0] == "sparse" ? sparseColumn(rest)
                                                             : makeError("\"{0}\" is no column "
                                                                         "kind (use label, dense "
                                                                         "or sparse)",
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
  for (const proto::FeedColumn &c : s.dense()) {
    if (c.transform() == "standardize" && !(c.std() > 0))
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
  return schema.sparse_size() + schema.dense_size() - denseWidth(schema);
}

int64_t keyWidth(const proto::FeedSchema &schema) {
  int64_t width = slotCount(schema);
  for (const proto::FeedColumn &c : schema.sparse())
    width += std::max<int64_t>(c.max_values(), 1) - 1;
  return width;
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
  out += "\n";
  for (const proto::FeedColumn &c : s.dense()) {
    out += "dense " + c.name();
    if (!c.transform().empty())
      out += " " + c.transform();
    if (c.transform() == "standardize")
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
  return out;
}

} // namespace oar
