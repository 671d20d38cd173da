// What a recipe learns from its training data before it is built: standardized dense inputs,
// the schema's statistics and a vocabulary sized to the keys; and the settings it is built with.
#include <bit>
#include <charconv>

#include "api/recipes.h"
#include "feed/schema.h"
#include "feed/schema_statistics.h"
#include "support/error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

namespace {

bool isCtr(const RecipeSpec &s) { return s.model == "wide_deep" || s.model == "deepfm"; }

constexpr int64_t kMinVocab = 1024, kMaxVocab = int64_t(1) << 22;

/// The shortest text that reads back as `v` (1e-06, 0.02, 37.825).
template <typename T> std::string numberText(T v) {
  char text[32];
  auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  return std::string(text, end);
}

} // namespace

llvm::Expected<std::vector<std::string>> fitRecipeToData(RecipeSpec &s,
                                                         const llvm::StringSet<> &given) {
  std::vector<std::string> said;
  if (!s.schema)
    return said;
  proto::FeedSchema &schema = *s.schema;
  // A tower fed raw prices and counts (values in the thousands beside embeddings near 0)
  // trains badly: a CTR recipe standardizes what the user left plain.
  if (isCtr(s) && !given.count("raw-dense"))
    for (proto::FeedColumn &c : *schema.mutable_dense())
      if (c.transform().empty()) {
        c.set_transform("standardize");
        c.set_auto_stats(true);
      }
  bool sizeVocab = isCtr(s) && !given.count("vocab");
  if (!hasAutoStatistics(schema) && !sizeVocab)
    return said;
  if (s.data.empty())
    return makeError("the schema's {0} come from the training data: give --data",
                     hasAutoStatistics(schema) ? "statistics (standardize, bucketize auto)"
                                               : "vocabulary size");
  proto::FeedSchema before = schema;
  auto stats = computeSchemaStatistics(schema, s.format, s.data);
  if (!stats)
    return stats.takeError();
  for (int i = 0; i < schema.dense_size(); ++i) {
    const proto::FeedColumn &was = before.dense(i), &c = schema.dense(i);
    if (was.auto_stats())
      said.push_back(llvm::formatv("dense {0}: standardize with mean {1} and std {2} (from {3} "
                                   "rows)",
                                   c.name(), numberText(c.mean()), numberText(c.std()),
                                   stats->rows));
    else if (was.auto_buckets() > 0)
      said.push_back(llvm::formatv("dense {0}: {1} buckets at the data's quantiles (of {2} "
                                   "asked)",
                                   c.name(), c.boundaries_size() + 1, was.auto_buckets()));
  }
  if (sizeVocab) {
    uint64_t want = static_cast<uint64_t>(std::max<int64_t>(stats->distinctKeys, 1)) * 4;
    s.vocab = std::clamp<int64_t>(static_cast<int64_t>(std::bit_ceil(want)), kMinVocab, kMaxVocab);
    said.push_back(llvm::formatv("vocab {0}: about {1} distinct keys in {2} rows (--vocab sets "
                                 "it)",
                                 s.vocab, stats->distinctKeys, stats->rows));
  }
  return said;
}

std::string describeRecipe(const RecipeSpec &s) {
  std::string out;
  auto line = [&](llvm::StringRef name, const std::string &value) {
    out += llvm::formatv("  {0,-20} {1}\n", name, value).str();
  };
  auto join = [](const std::vector<int64_t> &v) {
    std::string t;
    for (int64_t x : v)
      t += (t.empty() ? "" : ",") + std::to_string(x);
    return t.empty() ? std::string("none") : t;
  };
  line("model", s.model);
  line("optimizer", s.optimizer);
  line("lr", numberText(s.lr));
  if (s.optimizer == "adam" || s.optimizer == "adamw" || s.optimizer == "adagrad")
    line("epsilon", numberText(s.epsilon.value_or(s.optimizer == "adagrad" ? 1e-6f : 1e-8f)));
  if (s.optimizer == "adagrad")
    line("initial-accumulator", numberText(s.initialAccumulator));
  line("batch-size", std::to_string(s.batchSize));
  line("epochs", std::to_string(s.epochs));
  line("shuffle", s.shuffle ? "on" : "off");
  if (s.model == "mlp" || isCtr(s))
    line("hidden", join(s.hidden));
  if (isCtr(s)) {
    line("emb-dim", std::to_string(s.embDim));
    line("vocab", std::to_string(s.vocab));
    line("tables", s.distributedTables ? "on the pservers (distributed)" : "on the trainers");
  }
  if (s.norm != "none" || s.dropout > 0 || s.weightDecay > 0 || s.clipGlobalNorm > 0)
    line("toolkit", "norm " + s.norm + ", dropout " + numberText(s.dropout) + ", weight-decay " +
                        numberText(s.weightDecay) + ", clip " + numberText(s.clipGlobalNorm));
  if (s.schedule.type != "constant" || s.schedule.warmupSteps > 0)
    line("lr-schedule", s.schedule.type + " (warmup " + std::to_string(s.schedule.warmupSteps) +
                            ", decay steps " + std::to_string(s.schedule.decaySteps) + ", rate " +
                            numberText(s.schedule.decayRate) + ")" +
                            (isCtr(s) && s.distributedTables
                                 ? "; the dense params only, the tables at the constant rate "
                                   "(they train on the pservers)"
                                 : ""));
  return out;
}

} // namespace oar
