// libsvm: `label index:value ...`. The schema's dense columns are named by index (their value is
// the feature); every other index present is a value of the schema's one sparse column, which
// is multi-valued (a bag of the line's features: the key of each index, weighed as it pools).
#include "feed/line_format.h"
#include "support/error.h"

namespace oar {

namespace {

class SvmFormat : public LineFormat {
public:
  SvmFormat(const SchemaColumns &columns, const ColumnRole &bag)
      : LineFormat(columns), bag_(bag), seen_(columns.roles().size()) {}

  llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) override {
    const ColumnRole *first = columns_.roles().data();
    const char *at = line.begin();
    if (llvm::Error err = startWithLabel(at, line.end(), seen_, rows, r))
      return err;
    int64_t &features = seen_[&bag_ - first];
    for (llvm::StringRef token = nextToken(at, line.end()); !token.empty();
         token = nextToken(at, line.end())) {
      auto [index, value] = token.split(':');
      if (index.size() == token.size())
        return makeError("token \"{0}\" is not index:value", token);
      const ColumnRole *role = columns_.find(index);
      if (!role || role->kind == ColumnRole::Label || role == &bag_) {
        if (llvm::Error err = columns_.addValue(bag_, index, rows, r, features))
          return err;
        continue;
      }
      if (seen_[role - first]++)
        return makeError("index {0} appears twice on this line", index);
      if (llvm::Error err = columns_.setCell(*role, value, rows, r))
        return err;
    }
    return columns_.finishLine(seen_, rows, r);
  }

private:
  const ColumnRole &bag_;
  std::vector<int64_t> seen_;
};

} // namespace

llvm::Expected<std::unique_ptr<LineFormat>> makeSvmFormat(const SchemaColumns &columns) {
  const ColumnRole *bag = nullptr;
  int sparse = 0;
  for (const ColumnRole &role : columns.roles())
    if (role.kind == ColumnRole::Sparse || role.kind == ColumnRole::Multi) {
      ++sparse;
      bag = &role;
    }
  if (sparse != 1 || bag->kind != ColumnRole::Multi)
    return makeError("a libsvm line's features that are not dense columns go to one multi-valued "
                     "sparse column: declare exactly one (as --sparse=features:multi:64), not {0}",
                     sparse);
  return std::make_unique<SvmFormat>(columns, *bag);
}

} // namespace oar
