// The choice of line format by name, and what the formats share.
#include "feed/line_format.h"

#include "support/error.h"

namespace oar {

llvm::Error LineFormat::startWithLabel(const char *&at, const char *end, std::vector<int64_t> &seen,
                                       FeedRows &rows, int64_t r) const {
  std::fill(seen.begin(), seen.end(), 0);
  seen[0] = 1; // the label's role is the first
  return columns_.setCell(columns_.roles()[0], nextToken(at, end), rows, r);
}

llvm::Expected<std::unique_ptr<LineFormat>> makeLineFormat(llvm::StringRef format,
                                                           const SchemaColumns &columns) {
  if (format == "csv")
    return makeDelimitedFormat(columns, ',');
  if (format == "tsv")
    return makeDelimitedFormat(columns, '\t');
  if (format == "slot")
    return makeSlotFormat(columns);
  if (format == "libffm")
    return makeFfmFormat(columns);
  if (format == "libsvm")
    return makeSvmFormat(columns);
  return makeError("\"{0}\" is not a format read with a schema (use csv, tsv, slot, libffm or "
                   "libsvm)",
                   format);
}

} // namespace oar
