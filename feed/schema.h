// A feed's schema: which column is the label, which are dense features (and how each is
// transformed) and which are categorical slots. Declared once, from flags, a schema file or the
// C++ API, and stored in the program's feed (proto::FeedSchema), so every reader of the program
// (trainers, oar-predict) reads the columns the same way.
#pragma once

#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

/// The most buckets `bucketize auto N` makes.
inline constexpr int64_t kMaxAutoBuckets = 1024;

/// A schema from oar-model's flags:
///   label  "clicked" or "searched:positive=YES[:negative=NO]" (a label given by value)
///   dense  "price:log1p,age:standardize:35:12,count,amount:bucketize:1:10:100"
///          ("x:standardize" and "x:bucketize:auto:16": oar computes the mean and std, or 16
///          quantile buckets, from the training data; feed/schema_statistics.h)
///   sparse "user_id,item_id,hour:int,tags:multi:5:mean"  (":int": the ids are integers;
///          ":multi:N[:sum|:mean][:sep=C]": up to N values a row, pooled; csv cells split on C, |)
///   cross  "cat*hour,tags*cat:deep" (crossed columns; ":deep": the deep part embeds it too)
/// Errors name the flag and the entry.
llvm::Expected<proto::FeedSchema> schemaFromFlags(llvm::StringRef label, llvm::StringRef dense,
                                                  llvm::StringRef sparse,
                                                  llvm::StringRef cross = "");

/// A schema file: one column a line, `#` starts a comment.
///   label clicked [binary | real | classes N | positive V [negative V]]
///   dense price [log1p | standardize [MEAN STD] | bucketize B1 B2 ... | bucketize auto N]
///   sparse user_id [int] [multi N [sum | mean] [sep C]]
///   cross cat*hour [deep]
/// Errors name the file and line.
llvm::Expected<proto::FeedSchema> readSchemaFile(llvm::StringRef path);

/// Whether a schema can be read: a label, at least one feature, names used once, transforms
/// with their arguments (a positive std, ascending boundaries), a known label kind.
llvm::Error checkSchema(const proto::FeedSchema &schema);

/// The widths of the feed's dense var (dense columns not bucketized) and sparse var (single-valued
/// sparse columns, bucketized dense columns, then max_values for each multi-valued column).
int64_t denseWidth(const proto::FeedSchema &schema);
int64_t keyWidth(const proto::FeedSchema &schema);
/// The slots a model embeds: one per sparse or bucketized column, multi-valued ones included.
int64_t slotCount(const proto::FeedSchema &schema);
/// Whether any sparse column is multi-valued (the feed then fills a weights var too).
bool hasMultiValued(const proto::FeedSchema &schema);

/// One slot of the sparse var, in the feed's order: single-valued sparse columns, bucketized
/// dense columns, multi-valued columns, single-valued crosses, multi-valued crosses.
struct KeySection {
  std::string name;
  int64_t width = 1; ///< keys it holds (a multi-valued slot's max_values)
  bool multi = false; ///< weighed by the weights var and pooled into one slot
  bool deep = true;   ///< read by the deep part of a CTR model (crosses: only when marked deep)
};
std::vector<KeySection> keySections(const proto::FeedSchema &schema);
/// A cross's keys a row: the max_values of its multi-valued column, else 1.
int64_t crossWidth(const proto::FeedSchema &schema, const proto::FeedCross &cross);
bool crossIsMulti(const proto::FeedSchema &schema, const proto::FeedCross &cross);
/// Whether a dense column still waits for statistics from the data (standardize or bucketize
/// auto; feed/schema_statistics.h fills them in).
bool hasAutoStatistics(const proto::FeedSchema &schema);

/// The number of classes of a `classes:N` label; 0 for binary and real labels.
int64_t labelClasses(const proto::FeedSchema &schema);

/// One line per column, as a schema file writes it (oar-show prints it).
std::string describeSchema(const proto::FeedSchema &schema);

} // namespace oar
