// The streamed batch source every text feed shares (criteo, and csv, tsv, slot and libffm with a
// schema): each trainer reads its share of the files as batches are asked for, and never holds
// the data set. What differs between formats is how a line becomes a row (a RowParser).
//
// Trainer i of N reads data lines i, i+N, ... of a single file (a header, when the format has
// one, is read by every trainer), or whole files i, i+N, ... when the feed names several (at
// least N). Files may be gzip-compressed. With `shuffle`, a buffer of `shuffle_buffer` rows
// (seeded by `seed` and the trainer) shuffles the stream; `limit` reads only the first data
// lines of each file. A batch fills the vars label [B, 1], dense [B, D] (when D > 0) and
// sparse [B, S] i64 (when S > 0).
#pragma once

#include <functional>

#include "feed/batch_source.h"
#include "feed/feed_rows.h"

namespace oar {

/// How one line of a file becomes one row. A parser reads one file, so it may keep what the
/// file's header says.
class RowParser {
public:
  virtual ~RowParser();
  /// Whether a file's first line is a header, read before the lines are shared out.
  virtual bool hasHeader() const { return false; }
  virtual llvm::Error readHeader(llvm::StringRef line) { return llvm::Error::success(); }
  /// Parses a data line into row `r` of `rows` (zeros when called). The error says what is
  /// wrong; the caller puts `file:line: ` before it.
  virtual llvm::Error parse(llvm::StringRef line, FeedRows &rows, int64_t r) = 0;
};

/// What a stream's rows hold and how its lines are read.
struct StreamLayout {
  int64_t denseWidth = 0, slots = 0;
  bool weights = false; ///< a weights var [B, slots] f32 follows the sparse one
  std::vector<DType> dtypes; ///< of the label, dense (D > 0), sparse (S > 0) and weights vars
  std::function<llvm::Expected<std::unique_ptr<RowParser>>()> makeParser; ///< one per file
};

/// Fills `batch` with `rows` as a stream of `layout` does: the label [n, 1], then dense [n, D]
/// (D > 0), sparse [n, S] i64 (S > 0) and weights [n, S] f32, in `layout.dtypes`.
void fillBatch(const FeedRows &rows, const StreamLayout &layout, std::vector<Tensor> &batch);

/// One var a streamed feed fills: its role (label, dense, sparse, weights), width and dtypes.
struct FeedVarSpec {
  const char *role;
  int64_t width;
  std::vector<DType> dtypes;
  const char *dtypeNames; ///< for the error: "f32 or f64"
};
/// Checks that the feed names one declared var [B, width] of an allowed dtype per spec, in order;
/// returns their dtypes. Errors name the format, the column, its role and the var.
llvm::Expected<std::vector<DType>> checkFeedVars(const proto::DataFeed &feed,
                                                 const proto::Block &block,
                                                 llvm::ArrayRef<FeedVarSpec> specs);

/// Opens trainer `trainerId`'s share of `feed`'s files (see the file comment); checks the batch
/// size, the trainer and that its files exist; reads nothing yet.
llvm::Expected<std::unique_ptr<BatchSource>> openStreamSource(const proto::DataFeed &feed,
                                                              StreamLayout layout,
                                                              int64_t trainerId, int64_t trainers);

} // namespace oar
