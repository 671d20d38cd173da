// A text format of a schema feed: how one line becomes one row, by the schema's columns. One
// object reads one file (a csv file's header says where its columns are), so each file may order
// its columns its own way.
#pragma once

#include <memory>

#include "feed/schema_columns.h"
#include "feed/stream_source.h"

namespace oar {

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

class LineFormat : public RowParser {
public:
  explicit LineFormat(const SchemaColumns &columns) : columns_(columns) {}

protected:
  /// For the formats whose label is a line's first token (libffm, libsvm): clears `seen` (values
  /// of each role on this line), reads the label from the token at `at` and advances past it.
  llvm::Error startWithLabel(const char *&at, const char *end, std::vector<int64_t> &seen,
                             FeedRows &rows, int64_t r) const;

  const SchemaColumns &columns_;
};

/// The formats a schema feed reads: csv and tsv (with a header; columns by name), slot (Paddle's
/// `name:value` tokens), libffm (`label field:index:value`, fields named by number), libsvm
/// (`label index:value`: dense columns by index, every other feature in one multi-valued column).
inline constexpr const char *kSchemaFormats[] = {"csv", "tsv", "slot", "libffm", "libsvm"};

llvm::Expected<std::unique_ptr<LineFormat>> makeLineFormat(llvm::StringRef format,
                                                           const SchemaColumns &columns);

/// Each format's reader (csv_format.cc, slot_format.cc, ffm_format.cc, svm_format.cc).
std::unique_ptr<LineFormat> makeDelimitedFormat(const SchemaColumns &columns, char delimiter);
std::unique_ptr<LineFormat> makeSlotFormat(const SchemaColumns &columns);
std::unique_ptr<LineFormat> makeFfmFormat(const SchemaColumns &columns);
llvm::Expected<std::unique_ptr<LineFormat>> makeSvmFormat(const SchemaColumns &columns);

} // namespace oar
