// Raw rows encoded by the model's schema (see row_encoder.h).
#include "serving/row_encoder.h"

#include "feed/schema_source.h"
#include "ir/program.h"
#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

llvm::Expected<RowEncoder> RowEncoder::make(const proto::DataFeed &feed,
                                            const proto::Block &block,
                                            const std::vector<std::string> &inputs) {
  if (!isSchemaFeed(feed))
    return makeError("the model's feed ({0}) has no schema: raw rows need one to say what each "
                     "column is (a csv, tsv, slot or libffm feed with --label/--dense/--sparse "
                     "or --schema)",
                     feed.format().empty() ? "none" : feed.format());
  auto schema = SchemaColumns::make(feed.schema());
  if (!schema)
    return schema.takeError();
  schema->setLabelOptional(true);
  // The feed's vars, in the order a schema feed fills them (feed/schema_source.cc).
  std::vector<Part> parts = {Label};
  if (schema->denseWidth() > 0)
    parts.push_back(Dense);
  if (schema->slots() > 0)
    parts.push_back(Sparse);
  if (schema->weighted())
    parts.push_back(Weights);
  if (static_cast<size_t>(feed.columns_size()) != parts.size())
    return makeError("the model's feed names {0} vars ({1}); its schema fills {2}",
                     feed.columns_size(), llvm::join(feed.columns(), ", "), parts.size());
  RowEncoder e;
  for (const std::string &in : inputs) {
    auto at = llvm::find(feed.columns(), in);
    if (at == feed.columns().end())
      return makeError("input {0} is none of the feed's vars ({1})", in,
                       llvm::join(feed.columns(), ", "));
    const proto::Var *v = findVar(block, in);
    if (!v)
      return makeError("input {0} is not declared", in);
    e.inputs_.emplace_back(parts[at - feed.columns().begin()], v->type().dtype());
  }
  e.schema_ = std::make_shared<const SchemaColumns>(std::move(*schema));
  return e;
}

std::vector<std::string> RowEncoder::columnNames() const {
  std::vector<std::string> names;
  for (const ColumnRole &role : schema_->roles())
    if (role.kind != ColumnRole::Cross)
      names.push_back(role.name);
  return names;
}

llvm::Expected<std::vector<Tensor>>
RowEncoder::encode(llvm::ArrayRef<std::string> columns,
                   llvm::ArrayRef<std::vector<std::string>> cells) const {
  const SchemaColumns &s = *schema_;
  std::vector<const ColumnRole *> roleOf;
  llvm::StringSet<> named;
  for (const std::string &c : columns) {
    const ColumnRole *role = s.find(c);
    if (!role || role->kind == ColumnRole::Cross)
      return makeError("the model has no column {0} (its columns: {1}{2})", c,
                       llvm::join(columnNames(), ", "),
                       role ? "; a cross is computed from its columns" : "");
    if (!named.insert(c).second)
      return makeError("column {0} is named twice", c);
    roleOf.push_back(role);
  }
  FeedRows rows(s.denseWidth(), s.slots(), s.weighted());
  for (size_t r = 0; r < cells.size(); ++r) {
    if (cells[r].size() != columns.size())
      return makeError("row {0} has {1} cells for {2} columns", r, cells[r].size(),
                       columns.size());
    int64_t at = rows.add();
    // The columns the rows do not name read as an empty csv cell would.
    for (const ColumnRole &role : s.roles())
      if (role.kind != ColumnRole::Cross && role.kind != ColumnRole::Label &&
          !named.count(role.name))
        if (llvm::Error err = s.setCell(role, "", rows, at))
          return addContext(std::move(err), "row " + std::to_string(r) + ", column " + role.name);
    for (size_t c = 0; c < columns.size(); ++c)
      if (llvm::Error err = s.setCell(*roleOf[c], cells[r][c], rows, at))
        return addContext(std::move(err), "row " + std::to_string(r) + ", column " + columns[c]);
    s.finishRow(rows, at);
  }
  int64_t n = rows.size();
  std::vector<Tensor> out;
  for (auto [part, dtype] : inputs_) {
    int64_t width = part == Label ? 1 : part == Dense ? s.denseWidth() : s.slots();
    Tensor t(part == Sparse ? proto::I64 : dtype, {n, width});
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < width; ++j) {
        int64_t i = r * width + j;
        if (part == Sparse) {
          t.data<int64_t>()[i] = static_cast<int64_t>(rows.keys(r)[j]);
          continue;
        }
        double v = part == Label ? rows.label(r) : part == Dense ? rows.dense(r)[j]
                                                                 : rows.weights(r)[j];
        if (t.dtype() == proto::F64)
          t.data<double>()[i] = v;
        else if (t.dtype() == proto::I64)
          t.data<int64_t>()[i] = static_cast<int64_t>(v);
        else
          t.data<float>()[i] = static_cast<float>(v);
      }
    out.push_back(std::move(t));
  }
  return out;
}

} // namespace oar
