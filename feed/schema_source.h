// The streamed source of a schema feed (csv, tsv, slot, libffm): each trainer reads its share
// of the files as batches are asked for, as the criteo feed does, and never holds the data set.
//
// Trainer i of N reads data lines i, i+N, ... of a single file (a header, when the format has
// one, is read by every trainer), or whole files i, i+N, ... when the feed names several (at
// least N). Files may be gzip-compressed. With `shuffle`, a buffer of `shuffle_buffer` rows
// (seeded by `seed` and the trainer) shuffles the stream; `limit` reads only the first data
// lines of each file. The feed's vars: label [B, 1], dense [B, D] when the schema has dense
// columns, sparse [B, S] i64 (feed/schema.h).
#pragma once

#include "feed/batch_source.h"
#include "feed/schema_columns.h"
#include "feed/stream_source.h"

namespace oar {

/// Whether `feed` is read through a schema (its format is one of kSchemaFormats and it has one).
bool isSchemaFeed(const proto::DataFeed &feed);

/// What the feed's vars hold for `schema` (their dtypes and widths; no parser): checks that the
/// feed names the vars a schema feed fills, declared in `block`.
llvm::Expected<StreamLayout> schemaStreamLayout(const proto::DataFeed &feed,
                                                const proto::Block &block,
                                                const SchemaColumns &schema);

/// Checks the schema, the vars and that the files exist; reads nothing yet.
llvm::Expected<std::unique_ptr<BatchSource>> openSchemaSource(const proto::DataFeed &feed,
                                                              const proto::Block &block,
                                                              int64_t trainerId, int64_t trainers);

} // namespace oar
