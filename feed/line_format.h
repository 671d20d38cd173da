// A text format of a schema feed: how one line becomes one row. One object reads one file (a
// csv file's header says where its columns are), so each file may order its columns its own way.
#pragma once

#include <memory>

#include "feed/schema_columns.h"

namespace oar {

class LineFormat {
public:
  explicit LineFormat(const SchemaColumns &columns) : columns_(columns) {}
  virtual ~LineFormat();
  /// Whether a file's first line is a header, read before the lines are shared out.
  virtual bool hasHeader() const { return false; }
  /// Reads the header: finds the schema's columns in it.
  virtual llvm::Error readHeader(llvm::StringRef line) { return llvm::Error::success(); }
  /// Parses a data line into row `r` of `rows`. The error says what is wrong; the caller
  /// puts `file:line: ` before it.
  virtual llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) = 0;

protected:
  const SchemaColumns &columns_;
};

/// The next token of a line separated by spaces or tabs, advancing `at`; empty at the end.
/// (llvm::StringRef::find_first_of builds a table on each call: a third of a slot file's parse.)
inline llvm::StringRef nextToken(const char *&at, const char *end) {
  while (at < end && (*at == ' ' || *at == '\t'))
    ++at;
  const char *begin = at;
  while (at < end && *at != ' ' && *at != '\t')
    ++at;
  return llvm::StringRef(begin, at - begin);
}

/// The formats a schema feed reads: csv and tsv (with a header; columns by name), slot (Paddle's
/// `name:value` tokens), libffm (`label field:index:value`, fields named by number).
inline constexpr const char *kSchemaFormats[] = {"csv", "tsv", "slot", "libffm"};

llvm::Expected<std::unique_ptr<LineFormat>> makeLineFormat(llvm::StringRef format,
                                                           const SchemaColumns &columns);

/// Each format's reader (csv_format.cc, slot_format.cc, ffm_format.cc).
std::unique_ptr<LineFormat> makeDelimitedFormat(const SchemaColumns &columns, char delimiter);
std::unique_ptr<LineFormat> makeSlotFormat(const SchemaColumns &columns);
std::unique_ptr<LineFormat> makeFfmFormat(const SchemaColumns &columns);

} // namespace oar
