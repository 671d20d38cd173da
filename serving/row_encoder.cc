// Raw rows encoded by the model's schema (see row_encoder.h).
#include "serving/row_encoder.h"

#include "feed/schema_source.h"
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
  auto layout = schemaStreamLayout(feed, block, *schema);
  if (!layout)
    return layout.takeError();
  RowEncoder e;
  e.layout_ = std::move(*layout);
  for (const std::string &in : inputs) {
    auto at = llvm::find(feed.columns(), in);
    if (at == feed.columns().end())
      return makeError("input {0} is none of the feed's vars ({1})", in,
                       llvm::join(feed.columns(), ", "));
    e.inputs_.push_back(static_cast<size_t>(at - feed.columns().begin()));
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
  std::vector<Tensor> batch, out;
  fillBatch(rows, layout_, batch);
  for (size_t var : inputs_)
    out.push_back(batch[var]); // a Tensor's copy shares its buffer
  return out;
}

} // namespace oar
