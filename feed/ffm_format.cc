// libffm: `label field:index:value ...`. The schema names fields by number: a sparse field's
// index is its key (hashed with the field), a dense field's value is the feature's value. The
// label is the line's first token, whatever the schema calls it.
#include "feed/line_format.h"
#include "support/error.h"

namespace oar {

namespace {

class FfmFormat : public LineFormat {
public:
  explicit FfmFormat(const SchemaColumns &columns)
      : LineFormat(columns), seen_(columns.roles().size()) {}

  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    const ColumnRole *first = columns_.roles().data();
    const char *at = line.begin();
    if (llvm::Error err = startWithLabel(at, line.end(), seen_, rows, r))
      return err;
    for (llvm::StringRef token = nextToken(at, line.end()); !token.empty();
         token = nextToken(at, line.end())) {
      auto [field, indexValue] = token.split(':');
      auto [index, value] = indexValue.split(':');
      if (field.size() == token.size() || index.size() == indexValue.size())
        return makeError("token \"{0}\" is not field:index:value", token);
      const ColumnRole *role = columns_.find(field);
      if (!role || role->kind == ColumnRole::Label)
        continue;
      int64_t &values = seen_[role - first];
      if (role->kind == ColumnRole::Multi) { // a field named again gives it another feature
        if (llvm::Error err = columns_.addValue(*role, index, rows, r, values))
          return err;
        continue;
      }
      if (values++)
        return makeError("field {0} has more than one feature on this line; declare it multi N "
                         "to read several",
                         field);
      bool byIndex = role->kind == ColumnRole::Sparse;
      if (llvm::Error err = columns_.setCell(*role, byIndex ? index : value, rows, r))
        return err;
    }
    return columns_.finishLine(seen_, rows, r);
  }

private:
  std::vector<int64_t> seen_;
};

} // namespace

std::unique_ptr<LineFormat> makeFfmFormat(const SchemaColumns &columns) {
  return std::make_unique<FfmFormat>(columns);
}

} // namespace oar
