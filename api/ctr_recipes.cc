// The CTR recipes, wide & deep and DeepFM, over the criteo feed's three columns.
#include "api/recipes.h"
#include "ir/error.h"

namespace oar {

namespace {

constexpr int64_t kSlots = 26, kDense = 13;

/// The parts both models share: the feed's vars, the keys folded into the tables, the first-order
/// (wide) term and the deep tower's input.
struct CtrInputs {
  std::string label, dense, ids;
  std::string wide;    // [B, 1]: a weight per key, summed over the slots, + a linear dense term
  std::string vectors; // [B, 26, embDim]: each slot's embedding
  std::string deepIn;  // [B, 26 * embDim + 13]: the embeddings and the dense features
};

CtrInputs ctrInputs(ModelBuilder &m, const RecipeSpec &s) {
  CtrInputs in;
  std::string keys = m.data("sparse", {kSlots}, proto::I64);
  in.dense = m.data("dense", {kDense});
  in.label = m.data("label", {1});
  in.ids = m.idMod(keys, s.vocab);
  std::string weights = m.embedding(in.ids, s.vocab, 1, /*isSparse=*/true, s.distributedTables,
                                    Initializer::constant(0));
  in.wide = m.elementwise("elementwise_add",
                          m.reduceSum(m.reshape(weights, {-1, kSlots}), {1}, /*keepDim=*/true),
                          m.fc(in.dense, 1));
  in.vectors = m.embedding(in.ids, s.vocab, s.embDim, /*isSparse=*/true, s.distributedTables,
                           Initializer::uniform(-0.05f, 0.05f));
  in.deepIn = m.concat({m.reshape(in.vectors, {-1, kSlots * s.embDim}), in.dense});
  return in;
}

/// The MLP on the embeddings and dense features, to one logit.
llvm::Expected<std::string> deepTower(ModelBuilder &m, const RecipeSpec &s, const CtrInputs &in) {
  std::string h = in.deepIn;
  for (int64_t size : s.hidden) {
    if (size <= 0)
      return makeError("--hidden sizes must be positive, got {0}", size);
    h = m.fc(h, size, s.act);
  }
  return m.fc(h, 1);
}

/// DeepFM's second-order term: 0.5 * sum_k ((sum_i v_ik)^2 - sum_i v_ik^2), every pair of slots'
/// embeddings dotted, in O(slots * width).
std::string factorisationMachine(ModelBuilder &m, const CtrInputs &in) {
  std::string sum = m.reduceSum(in.vectors, {1});                                 // [B, K]
  std::string squareOfSum = m.elementwise("elementwise_mul", sum, sum);           // [B, K]
  std::string squares = m.elementwise("elementwise_mul", in.vectors, in.vectors); // [B, 26, K]
  std::string sumOfSquares = m.reduceSum(squares, {1});                           // [B, K]
  std::string pairs = m.elementwise("elementwise_sub", squareOfSum, sumOfSquares);
  return m.scale(m.reduceSum(pairs, {1}, /*keepDim=*/true), 0.5f); // [B, 1]
}

} // namespace

void applyCtrDefaults(RecipeSpec &spec, bool optimizerGiven, bool lrGiven, bool batchGiven,
                      bool hiddenGiven) {
  if (spec.model != "wide_deep" && spec.model != "deepfm")
    return;
  if (!optimizerGiven)
    spec.optimizer = "adagrad";
  if (!lrGiven)
    spec.lr = 0.02f;
  if (!batchGiven)
    spec.batchSize = 1000;
  if (!hiddenGiven)
    spec.hidden = {400, 400, 400};
}

llvm::Expected<ModelBuilder> buildCtrRecipe(const RecipeSpec &s) {
  if (s.format != "criteo")
    return makeError("--model={0} reads click logs: use --format=criteo (got \"{1}\")", s.model,
                     s.format);
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
    return makeError("--format criteo needs --data files");
  ModelBuilder m(s.seed);
  CtrInputs in = ctrInputs(m, s);
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
  std::vector<std::string> columns = {in.label, in.dense, "sparse"};
  m.setTrainFeed(recipeFeed(s, s.data, columns, ""));
  if (!s.testData.empty())
    m.setTestFeed(recipeFeed(s, s.testData, columns, ""));
  if (llvm::Error err = m.status())
    return err;
  return m;
}

} // namespace oar
