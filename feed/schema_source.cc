// A schema feed's vars checked, and its stream opened with the format's line parser.
#include "feed/schema_source.h"

#include "feed/line_format.h"
#include "feed/schema.h"
#include "feed/stream_source.h"
#include "support/error.h"

namespace oar {

namespace {

/// The feed's vars: label [B, 1], dense [B, D] (when D > 0), sparse [B, S] i64 (when S > 0),
/// weights [B, S] f32 (with multi-valued columns).
std::vector<FeedVarSpec> schemaVars(const SchemaColumns &schema) {
  std::vector<FeedVarSpec> vars = {
      {"label", 1, {proto::F32, proto::F64, proto::I64}, "f32, f64 or i64"}};
  if (schema.denseWidth() > 0)
    vars.push_back({"dense", schema.denseWidth(), {proto::F32, proto::F64}, "f32 or f64"});
  if (schema.slots() > 0)
    vars.push_back({"sparse", schema.slots(), {proto::I64}, "i64"});
  if (schema.weighted())
    vars.push_back({"weights", schema.slots(), {proto::F32}, "f32"});
  return vars;
}

} // namespace

bool isSchemaFeed(const proto::DataFeed &feed) {
  return llvm::is_contained(kSchemaFormats, feed.format()) && feed.has_schema();
}

llvm::Expected<StreamLayout> schemaStreamLayout(const proto::DataFeed &feed,
                                                const proto::Block &block,
                                                const SchemaColumns &schema) {
  auto dtypes = checkFeedVars(feed, block, schemaVars(schema));
  if (!dtypes)
    return dtypes.takeError();
  StreamLayout layout;
  layout.dtypes = std::move(*dtypes);
  layout.denseWidth = schema.denseWidth(), layout.slots = schema.slots();
  layout.weights = schema.weighted();
  return layout;
}

llvm::Expected<std::unique_ptr<BatchSource>> openSchemaSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers) {
  auto schema = SchemaColumns::make(feed.schema());
  if (!schema)
    return schema.takeError();
  schema->setLabelOptional(feed.unlabeled());
  if (auto probe = makeLineFormat(feed.format(), *schema); !probe)
    return probe.takeError();
  auto layout = schemaStreamLayout(feed, block, *schema);
  if (!layout)
    return layout.takeError();
  auto columns = std::make_shared<SchemaColumns>(std::move(*schema));
  std::string format = feed.format();
  layout->makeParser = [columns, format]() -> llvm::Expected<std::unique_ptr<RowParser>> {
    auto parser = makeLineFormat(format, *columns);
    if (!parser)
      return parser.takeError();
    return std::unique_ptr<RowParser>(std::move(*parser));
  };
  return openStreamSource(feed, std::move(*layout), trainerId, trainers);
}

} // namespace oar
