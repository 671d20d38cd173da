// The CTR recipes, wide & deep and DeepFM, over a click log's label, dense features and slots:
// Criteo's layout (13 dense, 26 slots) or any schema's (feed/schema.h).
#include <iterator>

#include "api/recipes.h"
#include "feed/schema.h"
#include "support/error.h"

namespace oar {

namespace {

constexpr int64_t kCriteoSlots = 26, kCriteoDense = 13;

/// The keys a row holds, slot by slot (feed/schema.h's KeySection): single-valued slots, runs of
/// keys of multi-valued ones (weighed by the feed's weights var, then pooled into one slot), and
/// which of them the deep part reads (crosses only when marked deep).
struct KeyLayout {
  std::vector<KeySection> sections;
  int64_t keys() const {
    int64_t n = 0;
    for (const KeySection &k : sections)
      n += k.width;
    return n;
  }
  int64_t slots() const { return static_cast<int64_t>(sections.size()); }
  bool weighted() const {
    return llvm::any_of(sections, [](const KeySection &k) { return k.multi; });
  }
  KeyLayout deepOnly() const {
    KeyLayout d;
    llvm::copy_if(sections, std::back_inserter(d.sections),
                  [](const KeySection &k) { return k.deep; });
    return d;
  }
};

/// The parts both models share: the feed's vars, the keys folded into the tables, the first-order
/// (wide) term and the deep tower's input.
struct CtrInputs {
  int64_t slots = 0, dense = 0;
  std::string label, denseVar, ids, weights;
  std::string wide;    // [B, 1]: a weight per key, summed over the slots, + a linear dense term
  std::string vectors; // [B, deep slots, embDim]: each deep slot's embedding
  std::string deepIn;  // [B, deep slots * embDim + dense]: the embeddings and the dense features
};

/// Runs of consecutive sections alike in `same` (fewer split and concat pieces): each run's width
/// and its first section.
template <typename Same>
std::vector<std::pair<int64_t, const KeySection *>> runsOf(const KeyLayout &layout, Same same) {
  std::vector<std::pair<int64_t, const KeySection *>> runs;
  for (const KeySection &k : layout.sections)
    if (!runs.empty() && same(*runs.back().second, k) && !k.multi && !runs.back().second->multi)
      runs.back().first += k.width;
    else
      runs.push_back({k.width, &k});
  return runs;
}

/// Each multi-valued slot's keys' vectors ([B, keys, K], weighed) summed into one slot's:
/// [B, slots, K].
std::string poolSlots(ModelBuilder &m, const std::string &vectors, const KeyLayout &keys) {
  auto runs = runsOf(keys, [](const KeySection &, const KeySection &) { return true; });
  std::vector<int64_t> sections;
  for (auto &r : runs)
    sections.push_back(r.first);
  std::vector<std::string> pieces = m.split(vectors, sections, 1);
  for (size_t i = 0; i < pieces.size(); ++i)
    if (runs[i].second->multi)
      pieces[i] = m.reduceSum(pieces[i], {1}, /*keepDim=*/true);
  return pieces.size() == 1 ? pieces[0] : m.concat(pieces, 1);
}

/// The columns of `x` ([B, keys]) that the deep sections hold.
std::string deepColumns(ModelBuilder &m, const std::string &x, const KeyLayout &layout) {
  auto runs = runsOf(layout, [](const KeySection &a, const KeySection &b) {
    return a.deep == b.deep;
  });
  std::vector<int64_t> widths;
  for (auto &r : runs)
    widths.push_back(r.first);
  std::vector<std::string> pieces = m.split(x, widths, 1), deep;
  for (size_t i = 0; i < pieces.size(); ++i)
    if (runs[i].second->deep)
      deep.push_back(pieces[i]);
  return deep.size() == 1 ? deep[0] : m.concat(deep, 1);
}

CtrInputs ctrInputs(ModelBuilder &m, const RecipeSpec &s, const KeyLayout &layout,
                    int64_t dense) {
  CtrInputs in;
  int64_t keyCount = layout.keys();
  KeyLayout deep = layout.deepOnly();
  in.slots = deep.slots(), in.dense = dense;
  std::string keys = m.data("sparse", {keyCount}, proto::I64);
  if (layout.weighted())
    in.weights = m.data("weights", {keyCount});
  if (dense > 0)
    in.denseVar = m.data("dense", {dense});
  in.label = m.data("label", {1});
  in.ids = m.idMod(keys, s.vocab);
  std::string weights = m.embedding(in.ids, s.vocab, 1, /*isSparse=*/true, s.distributedTables,
                                    Initializer::constant(0));
  weights = m.reshape(weights, {-1, keyCount});
  if (!in.weights.empty()) // padding weighs 0, a mean's values 1/count
    weights = m.elementwise("elementwise_mul", weights, in.weights);
  in.wide = m.reduceSum(weights, {1}, /*keepDim=*/true);
  if (dense > 0)
    in.wide = m.elementwise("elementwise_add", in.wide, m.fc(in.denseVar, 1));
  bool allDeep = deep.keys() == keyCount;
  std::string deepIds = allDeep ? in.ids : deepColumns(m, in.ids, layout);
  in.vectors = m.embedding(deepIds, s.vocab, s.embDim, /*isSparse=*/true, s.distributedTables,
                           Initializer::uniform(-0.05f, 0.05f));
  if (deep.weighted()) {
    std::string deepWeights = allDeep ? in.weights : deepColumns(m, in.weights, layout);
    in.vectors = poolSlots(
        m, m.elementwise("elementwise_mul", in.vectors, deepWeights, /*axis=*/0), deep);
  }
  if (deep.keys() == 1) // a lookup of ids [B, 1] gives [B, K]: the FM term wants [B, 1, K]
    in.vectors = m.reshape(in.vectors, {-1, 1, s.embDim});
  in.deepIn = m.reshape(in.vectors, {-1, in.slots * s.embDim});
  if (dense > 0)
    in.deepIn = m.concat({in.deepIn, in.denseVar});
  return in;
}

/// The MLP on the embeddings and dense features, to one logit.
llvm::Expected<std::string> deepTower(ModelBuilder &m, const RecipeSpec &s, const CtrInputs &in) {
  std::string h = in.deepIn;
  for (int64_t size : s.hidden) {
    if (size <= 0)
      return makeError("--hidden sizes must be positive, got {0}", size);
    h = hiddenLayer(m, s, h, size);
  }
  return m.fc(h, 1);
}

/// DeepFM's second-order term: 0.5 * sum_k ((sum_i v_ik)^2 - sum_i v_ik^2), every pair of slots'
/// embeddings dotted, in O(slots * width).
std::string factorisationMachine(ModelBuilder &m, const CtrInputs &in) {
  std::string sum = m.reduceSum(in.vectors, {1});                                 // [B, K]
  std::string squareOfSum = m.elementwise("elementwise_mul", sum, sum);           // [B, K]
  std::string squares = m.elementwise("elementwise_mul", in.vectors, in.vectors); // [B, S, K]
  std::string sumOfSquares = m.reduceSum(squares, {1});                           // [B, K]
  std::string pairs = m.elementwise("elementwise_sub", squareOfSum, sumOfSquares);
  return m.scale(m.reduceSum(pairs, {1}, /*keepDim=*/true), 0.5f); // [B, 1]
}

} // namespace

void applyCtrDefaults(RecipeSpec &spec, const llvm::StringSet<> &given) {
  if (spec.model != "wide_deep" && spec.model != "deepfm")
    return;
  if (!given.count("optimizer"))
    spec.optimizer = "adagrad";
  // --lr=0.5 --initial-accumulator=0.1 --hidden=256,128 holds the curve of three ID-heavy logs
  // flat over epochs (docs/training.md), but trails these defaults by 0.13 AUC on a mean-pooled
  // libsvm bag in an async job: not the default until that is understood.
  if (!given.count("lr"))
    spec.lr = 0.02f;
  if (!given.count("batch-size"))
    spec.batchSize = 1000;
  if (!given.count("hidden"))
    spec.hidden = {400, 400, 400};
  if (!given.count("shuffle")) // click logs come sorted by time
    spec.shuffle = true;
}

std::string ctrDefaultsText() {
  return "wide_deep and deepfm, for each flag not given: --optimizer=adagrad --lr=0.02 "
         "--batch-size=1000 --hidden=400,400,400 --shuffle (a bounded buffer); with a schema, "
         "plain dense columns standardized from the data and --vocab sized to its keys";
}

llvm::Expected<ModelBuilder> buildCtrRecipe(const RecipeSpec &s) {
  KeyLayout keys;
  keys.sections.assign(kCriteoSlots, {"criteo", 1, false, true});
  int64_t dense = kCriteoDense;
  if (s.schema) {
    if (s.format == "criteo" || s.format.empty())
      return makeError("--model={0}: --label, --dense, --sparse and --schema describe csv, tsv, "
                       "slot and libffm files; criteo's layout is fixed",
                       s.model);
    if (!s.schema->label_kind().empty() && s.schema->label_kind() != "binary")
      return makeError("--model={0} predicts clicks: its label is binary (0 or 1), not {1}",
                       s.model, s.schema->label_kind());
    keys.sections = keySections(*s.schema);
    dense = denseWidth(*s.schema);
    if (keys.deepOnly().slots() == 0)
      return makeError("--model={0} embeds categorical columns: give it at least one --sparse "
                       "column (or a bucketized --dense one)",
                       s.model);
  } else if (s.format != "criteo") {
    return makeError("--model={0} reads click logs: use --format=criteo, or csv, tsv, slot or "
                     "libffm with the columns named (--label, --sparse, --dense or --schema; "
                     "docs/data.md) (got --format \"{1}\")",
                     s.model, s.format);
  }
  if (s.admitAfter < 1 || s.admitProbability <= 0 || s.admitProbability > 1 || s.evictAfter < 0)
    return makeError("--admit-after must be >= 1, --admit-probability in (0, 1] and --evict-after "
                     ">= 0 (got {0}, {1} and {2})",
                     s.admitAfter, s.admitProbability, s.evictAfter);
  if (s.embDim <= 0 || s.vocab <= 0)
    return makeError("--emb-dim and --vocab must be positive (got {0} and {1})", s.embDim, s.vocab);
  if (s.batchSize <= 0 || s.epochs <= 0)
    return makeError("--batch-size and --epochs must be positive (got {0} and {1})", s.batchSize,
                     s.epochs);
  if (s.data.empty())
    return makeError("--format {0} needs --data files", s.format);
  ModelBuilder m(s.seed);
  CtrInputs in = ctrInputs(m, s, keys, dense);
  auto deep = deepTower(m, s, in);
  if (!deep)
    return deep.takeError();
  std::string logit = m.elementwise("elementwise_add", in.wide, *deep);
  if (s.model == "deepfm")
    logit = m.elementwise("elementwise_add", logit, factorisationMachine(m, in));
  std::string loss = m.mean(m.sigmoidCrossEntropyWithLogits(logit, in.label));
  std::string click = m.activation(logit, "sigmoid"); // the click probability
  m.addMetric(m.auc(click, in.label));
  m.addPrediction(click);
  // Admission and eviction of the tables' rows, read by the distributed-table pass.
  for (proto::Op &op : *m.main().mutable_blocks(0)->mutable_ops())
    if (op.type() == "lookup_table") {
      setAttr(op, "admit_after", AttrValue(s.admitAfter));
      setAttr(op, "admit_probability", AttrValue(s.admitProbability));
      setAttr(op, "evict_after", AttrValue(s.evictAfter));
    }
  auto opt = makeRecipeOptimizer(s);
  if (!opt)
    return opt.takeError();
  if (auto grads = (*opt)->minimize(m, loss); !grads)
    return grads.takeError();
  std::vector<std::string> columns = {in.label};
  if (dense > 0)
    columns.push_back(in.denseVar);
  columns.push_back("sparse");
  if (!in.weights.empty())
    columns.push_back(in.weights);
  m.setTrainFeed(recipeFeed(s, s.data, columns, ""));
  if (!s.testData.empty())
    m.setTestFeed(recipeFeed(s, s.testData, columns, ""));
  if (llvm::Error err = m.status())
    return err;
  return m;
}

} // namespace oar
