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

namespace {

/// A format whose rows then get their crosses' keys (from the keys the format set).
class CrossingFormat : public LineFormat {
public:
  CrossingFormat(std::unique_ptr<LineFormat> inner, const SchemaColumns &columns)
      : LineFormat(columns), inner_(std::move(inner)) {}
  bool hasHeader() const override { return inner_->hasHeader(); }
  llvm::Error readHeader(llvm::StringRef line) override { return inner_->readHeader(line); }
  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    if (llvm::Error err = inner_->parse(line, rows, r))
      return err;
    columns_.finishRow(rows, r);
    return llvm::Error::success();
  }

private:
  std::unique_ptr<LineFormat> inner_;
};

llvm::Expected<std::unique_ptr<LineFormat>> makeUncrossedFormat(llvm::StringRef format,
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

} // namespace

llvm::Expected<std::unique_ptr<LineFormat>> makeLineFormat(llvm::StringRef format,
                                                           const SchemaColumns &columns) {
  auto inner = makeUncrossedFormat(format, columns);
  if (!inner || !columns.hasCrosses())
    return inner;
  return std::make_unique<CrossingFormat>(std::move(*inner), columns);
}

} // namespace oar
