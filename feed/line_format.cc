// The choice of line format by name.
#include "feed/line_format.h"

#include "ir/error.h"

namespace oar {

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
