// A schema feed's vars checked, and its stream opened with the format's line parser.
#include "feed/schema_source.h"

#include "feed/line_format.h"
#include "feed/schema.h"
#include "feed/stream_source.h"
#include "ir/error.h"

namespace oar {

namespace {

/// The feed's vars: label [B, 1], dense [B, D] (when D > 0), sparse [B, S] i64 (when S > 0),
/// weights [B, S] f32 (with multi-valued columns).
llvm::Expected<std::vector<DType>> checkVars(const proto::DataFeed &feed, const proto::Block &block,
                                             const SchemaColumns &schema) {
  struct Want {
    const char *role;
    int64_t width;
    std::vector<DType> dtypes;
    const char *dtypeNames;
  };
  std::vector<Want> want = {{"label", 1, {proto::F32, proto::F64, proto::I64}, "f32, f64 or i64"}};
  if (schema.denseWidth() > 0)
    want.push_back({"dense", schema.denseWidth(), {proto::F32, proto::F64}, "f32 or f64"});
  if (schema.slots() > 0)
    want.push_back({"sparse", schema.slots(), {proto::I64}, "i64"});
  if (schema.weighted())
    want.push_back({"weights", schema.slots(), {proto::F32}, "f32"});
  if (feed.columns_size() != static_cast<int>(want.size())) {
    std::string roles = want[0].role;
    for (size_t c = 1; c < want.size(); ++c)
      roles += std::string(", ") + want[c].role;
    return makeError("the {0} feed's schema fills {1} vars ({2}); the feed names {3}",
                     feed.format(), want.size(), roles, feed.columns_size());
  }
  std::vector<DType> dtypes;
  for (size_t c = 0; c < want.size(); ++c) {
    const proto::Var *v = findVar(block, feed.columns(c));
    if (!v)
      return makeError("{0} feed column {1} is not a declared var", feed.format(), feed.columns(c));
    auto dims = dimsOf(v->type());
    if (dims.size() != 2 || dims[1] != want[c].width ||
        !llvm::is_contained(want[c].dtypes, v->type().dtype()))
      return makeError("{0} feed column {1} ({2}) is var {3} of {4}; the schema makes it [B, {5}] "
                       "of {6}",
                       feed.format(), c + 1, want[c].role, v->name(), typeString(v->type()),
                       want[c].width, want[c].dtypeNames);
    dtypes.push_back(v->type().dtype());
  }
  return dtypes;
}

} // namespace

bool isSchemaFeed(const proto::DataFeed &feed) {
  return llvm::is_contained(kSchemaFormats, feed.format()) && feed.has_schema();
}

llvm::Expected<std::unique_ptr<BatchSource>> openSchemaSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers) {
  auto schema = SchemaColumns::make(feed.schema());
  if (!schema)
    return schema.takeError();
  if (auto probe = makeLineFormat(feed.format(), *schema); !probe)
    return probe.takeError();
  auto dtypes = checkVars(feed, block, *schema);
  if (!dtypes)
    return dtypes.takeError();
  StreamLayout layout;
  layout.dtypes = std::move(*dtypes);
  layout.denseWidth = schema->denseWidth(), layout.slots = schema->slots();
  layout.weights = schema->weighted();
  auto columns = std::make_shared<SchemaColumns>(std::move(*schema));
  std::string format = feed.format();
  layout.makeParser = [columns, format]() -> llvm::Expected<std::unique_ptr<RowParser>> {
    auto parser = makeLineFormat(format, *columns);
    if (!parser)
      return parser.takeError();
    return std::unique_ptr<RowParser>(std::move(*parser));
  };
  return openStreamSource(feed, std::move(layout), trainerId, trainers);
}

} // namespace oar
