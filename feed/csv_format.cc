// csv and tsv with a header: columns found by name, in any order, extra columns ignored. A field
// may be quoted ("a, b" and "say ""hi""" as RFC 4180 writes them), but may not span lines.
#include "feed/line_format.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

namespace {

class DelimitedFormat : public LineFormat {
public:
  DelimitedFormat(const SchemaColumns &columns, char delimiter)
      : LineFormat(columns), delimiter_(delimiter) {}

  bool hasHeader() const override { return true; }

  llvm::Error readHeader(llvm::StringRef line) override {
    if (llvm::Error err = split(line))
      return err;
    llvm::StringSet<> seen;
    rolesAt_.clear();
    for (llvm::StringRef name : fields_) {
      name = name.trim();
      if (!seen.insert(name).second && columns_.find(name))
        return makeError("the header names column {0} twice", name);
      rolesAt_.push_back(columns_.find(name));
    }
    for (const ColumnRole &role : columns_.roles())
      if (role.kind != ColumnRole::Cross && !seen.count(role.name) &&
          !(role.kind == ColumnRole::Label && columns_.labelOptional()))
        return makeError("the header has no column {0} (it has {1}); is this file's first line "
                         "its header, and the delimiter '{2}'?",
                         role.name, llvm::join(fields_, ", "),
                         delimiter_ == '\t' ? "\\t" : std::string(1, delimiter_));
    return llvm::Error::success();
  }

  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    if (llvm::Error err = split(line))
      return err;
    if (fields_.size() != rolesAt_.size())
      return makeError("{0} fields; the header has {1}", fields_.size(), rolesAt_.size());
    for (size_t i = 0; i < fields_.size(); ++i)
      if (const ColumnRole *role = rolesAt_[i])
        if (llvm::Error err = columns_.setCell(*role, fields_[i], rows, r))
          return err;
    return llvm::Error::success();
  }

private:
  /// Splits `line` into fields_, unquoting quoted ones (into unquoted_, which they point into).
  llvm::Error split(llvm::StringRef line) {
    fields_.clear();
    if (line.find('"') == llvm::StringRef::npos) { // the common case: no quotes, no copies
      line.split(fields_, delimiter_);
      return llvm::Error::success();
    }
    unquoted_.clear();
    unquoted_.reserve(line.size()); // fields_ point into it: it must not move
    size_t at = 0;
    for (;;) {
      if (at < line.size() && line[at] == '"') {
        size_t begin = unquoted_.size();
        size_t i = at + 1;
        for (;; ++i) {
          if (i >= line.size())
            return makeError("a quoted field does not end on its line (fields may not span "
                             "lines)");
          if (line[i] != '"') {
            unquoted_.push_back(line[i]);
          } else if (i + 1 < line.size() && line[i + 1] == '"') {
            unquoted_.push_back('"');
            ++i;
          } else {
            break;
          }
        }
        fields_.push_back(llvm::StringRef(unquoted_).slice(begin, unquoted_.size()));
        at = i + 1;
        if (at < line.size() && line[at] != delimiter_)
          return makeError("a quoted field is followed by \"{0}\" instead of the delimiter",
                           line.substr(at, 10));
      } else {
        size_t end = line.find(delimiter_, at);
        fields_.push_back(line.slice(at, end));
        at = end;
      }
      if (at >= line.size())
        return llvm::Error::success();
      ++at; // past the delimiter: another field follows, maybe empty
      if (at == line.size()) {
        fields_.push_back("");
        return llvm::Error::success();
      }
    }
  }

  char delimiter_;
  std::vector<const ColumnRole *> rolesAt_; ///< the header's columns: their roles, or null
  llvm::SmallVector<llvm::StringRef, 64> fields_;
  std::string unquoted_;
};

} // namespace

std::unique_ptr<LineFormat> makeDelimitedFormat(const SchemaColumns &columns, char delimiter) {
  return std::make_unique<DelimitedFormat>(columns, delimiter);
}

} // namespace oar
