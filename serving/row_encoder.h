// Raw rows (cells as text, by column name) turned into a predictor's input tensors by the
// model's own schema: the same transforms, buckets, hashes and crosses its data feed applies to
// a csv line, so a served row scores as the same row read from a file does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/tensor.h"
#include "feed/schema_columns.h"
#include "feed/stream_source.h"

namespace oar {

class RowEncoder {
public:
  /// The encoder of the schema feed `feed` (a csv, tsv, slot or libffm feed with a schema) for
  /// the inputs `inputs` of `block`. Errors say why the feed cannot encode them.
  static llvm::Expected<RowEncoder> make(const proto::DataFeed &feed, const proto::Block &block,
                                         const std::vector<std::string> &inputs);

  /// One tensor per input, a row per row of `cells`: `cells[r][c]` is row r's text for the column
  /// `columns[c]`, as a csv cell holds it (a multi-valued column's values joined by its
  /// separator). A column the rows do not name reads as missing, the label is not needed, and a
  /// column the model does not know is an error naming it.
  llvm::Expected<std::vector<Tensor>>
  encode(llvm::ArrayRef<std::string> columns,
         llvm::ArrayRef<std::vector<std::string>> cells) const;

  /// The columns a row may name, in the schema's order (the label first).
  std::vector<std::string> columnNames() const;

private:
  RowEncoder() = default;
  std::shared_ptr<const SchemaColumns> schema_;
  StreamLayout layout_;        ///< the feed's vars, as its stream fills them
  std::vector<size_t> inputs_; ///< per input, which of the feed's vars it is
};

} // namespace oar
