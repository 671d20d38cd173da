// The built-in recipes.
#include "api/recipes.h"

#include <cmath>

#include "api/optimizer.h"
#include "feed/schema.h"
#include "support/error.h"

namespace oar {

static llvm::Expected<std::unique_ptr<Optimizer>> namedOptimizer(const RecipeSpec &s) {
  if (s.optimizer == "sgd")
    return std::make_unique<SGD>(s.lr);
  if (s.optimizer == "momentum")
    return std::make_unique<Momentum>(s.lr, s.momentum);
  if (s.optimizer == "adam")
    return std::make_unique<Adam>(s.lr, s.beta1, s.beta2, s.epsilon.value_or(1e-8f));
  if (s.optimizer == "adamw")
    return std::make_unique<AdamW>(s.lr, 0.01f, s.beta1, s.beta2, s.epsilon.value_or(1e-8f));
  if (s.optimizer == "adagrad")
    return std::make_unique<Adagrad>(s.lr, s.epsilon.value_or(1e-6f), /*rowWise=*/false,
                                     s.initialAccumulator);
  return makeError("unknown optimizer \"{0}\" (use sgd, momentum, adam, adamw or adagrad)",
                   s.optimizer);
}

llvm::Expected<std::unique_ptr<Optimizer>> makeRecipeOptimizer(const RecipeSpec &s) {
  if (llvm::Error err = checkToolkit(s))
    return err;
  auto opt = namedOptimizer(s);
  if (!opt)
    return opt.takeError();
  if (s.weightDecayGiven || s.optimizer != "adamw")
    (*opt)->setWeightDecay(s.weightDecay);
  (*opt)->setClipGlobalNorm(s.clipGlobalNorm);
  (*opt)->setSchedule(s.schedule);
  // The pservers hold no schedule: distributed tables keep the base rate.
  if ((s.model == "wide_deep" || s.model == "deepfm") && s.distributedTables)
    (*opt)->setScheduleTables(false);
  return opt;
}

llvm::Error checkToolkit(const RecipeSpec &s) {
  if (s.norm != "none" && s.norm != "batch" && s.norm != "layer")
    return makeError("unknown --norm \"{0}\" (use none, batch or layer)", s.norm);
  if (!(s.dropout >= 0 && s.dropout < 1))
    return makeError("--dropout {0} must be in [0, 1)", s.dropout);
  if (!(s.weightDecay >= 0))
    return makeError("--weight-decay {0} must be 0 or more", s.weightDecay);
  if (!(s.initialAccumulator >= 0) || !std::isfinite(s.initialAccumulator))
    return makeError("--initial-accumulator {0} must be 0 or more", s.initialAccumulator);
  if (s.initialAccumulator != 0 && s.optimizer != "adagrad")
    return makeError("--initial-accumulator is adagrad's; --optimizer={0} has none", s.optimizer);
  if (!(s.clipGlobalNorm >= 0))
    return makeError("--clip-global-norm {0} must be 0 (off) or more", s.clipGlobalNorm);
  const LrSchedule &l = s.schedule;
  if (l.type != "constant" && l.type != "step" && l.type != "exponential" && l.type != "cosine")
    return makeError("unknown --lr-schedule \"{0}\" (use constant, step, exponential or cosine)",
                     l.type);
  if (l.warmupSteps < 0)
    return makeError("--warmup-steps {0} must be 0 or more", l.warmupSteps);
  if (l.type != "constant" && l.decaySteps <= 0)
    return makeError("--lr-schedule={0} needs --lr-decay-steps > 0, got {1}", l.type, l.decaySteps);
  if ((l.type == "step" || l.type == "exponential") && !(l.decayRate > 0))
    return makeError("--lr-schedule={0} needs --lr-decay-rate > 0, got {1}", l.type, l.decayRate);
  return llvm::Error::success();
}

std::string hiddenLayer(ModelBuilder &m, const RecipeSpec &s, llvm::StringRef x, int64_t size) {
  if (s.norm == "none") {
    std::string h = m.fc(x, size, s.act);
    return s.dropout > 0 ? m.dropout(h, s.dropout) : h;
  }
  // The norm's shift replaces a batch norm's fc bias.
  std::string h = m.fc(x, size, "", {}, /*bias=*/s.norm != "batch");
  h = s.norm == "batch" ? m.batchNorm(h, s.act) : m.layerNorm(h, s.act);
  return s.dropout > 0 ? m.dropout(h, s.dropout) : h;
}

FeedSpec recipeFeed(const RecipeSpec &s, const std::vector<std::string> &files,
                    const std::vector<std::string> &columns, llvm::StringRef split) {
  return {.format = s.format,
          .files = files,
          .columns = columns,
          .batchSize = s.batchSize,
          .epochs = s.epochs,
          .shuffle = s.shuffle,
          .seed = s.seed,
          .split = split.str(),
          .schema = s.schema};
}

namespace {

/// linear and mlp over a schema's dense columns: the input is as wide as they are, and the label
/// is a class index (softmax) or a real value (square error), whatever the schema left unsaid.
llvm::Error fitDenseSchema(RecipeSpec &s) {
  proto::FeedSchema &schema = *s.schema;
  if (slotCount(schema) > 0)
    return makeError("--model={0} reads dense columns only; sparse and bucketized columns need "
                     "--model=wide_deep or deepfm",
                     s.model);
  s.in = denseWidth(schema);
  bool classify = s.loss == "softmax_with_cross_entropy";
  std::string kind = classify ? "classes:" + std::to_string(s.out) : "real";
  if (schema.label_kind().empty() || (classify && schema.label_kind() == "binary" && s.out == 2))
    schema.set_label_kind(kind);
  if (schema.label_kind() != kind)
    return makeError("--model={0} with --loss {1} and --out {2} takes a {3} label; the schema's is "
                     "{4}",
                     s.model, s.loss, s.out, kind, schema.label_kind());
  if (!classify && s.out != 1)
    return makeError("--model={0} regresses one label column: --out must be 1, got {1}", s.model,
                     s.out);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<ModelBuilder> buildRecipe(const RecipeSpec &spec) {
  if (spec.model == "wide_deep" || spec.model == "deepfm")
    return buildCtrRecipe(spec);
  RecipeSpec s = spec;
  if (s.schema)
    if (llvm::Error err = fitDenseSchema(s))
      return err;
  if (s.in <= 0 || s.out <= 0)
    return makeError("--in and --out must be positive (got {0} and {1})", s.in, s.out);
  if (s.batchSize <= 0 || s.epochs <= 0)
    return makeError("--batch-size and --epochs must be positive (got {0} and {1})", s.batchSize,
                     s.epochs);
  if (s.act != "relu" && s.act != "tanh" && s.act != "sigmoid")
    return makeError("unknown --act \"{0}\" (use relu, tanh or sigmoid)", s.act);
  bool classify = s.loss == "softmax_with_cross_entropy";
  if (!classify && s.loss != "square_error_cost")
    return makeError("unknown --loss \"{0}\" (use square_error_cost or softmax_with_cross_entropy)",
                     s.loss);
  ModelBuilder m(s.seed);
  std::string x, pred;
  if (s.model == "lenet") {
    if (s.in != 784)
      return makeError("lenet takes 28x28 images: --in must be 784, got {0}", s.in);
    x = m.data("img", {1, 28, 28});
    std::string c1 = m.conv2d(x, 6, 5, 1, 0, "relu");
    std::string p1 = m.pool2d(c1, 2, "max", 2);
    std::string c2 = m.conv2d(p1, 16, 5, 1, 0, "relu");
    std::string p2 = m.pool2d(c2, 2, "max", 2);
    pred = m.fc(p2, s.out);
  } else if (s.model == "mlp" || s.model == "linear") {
    x = m.data(classify ? "img" : "x", {s.in});
    std::string h = x;
    if (s.model == "mlp")
      for (int64_t size : s.hidden) {
        if (size <= 0)
          return makeError("--hidden sizes must be positive, got {0}", size);
        h = hiddenLayer(m, s, h, size);
      }
    pred = m.fc(h, s.out);
  } else {
    return makeError("unknown --model \"{0}\" (use linear, mlp, lenet, wide_deep or deepfm)",
                     s.model);
  }
  std::string label = classify ? m.data("label", {1}, proto::I64) : m.data("y", {s.out});
  std::string cost =
      classify ? m.softmaxWithCrossEntropy(pred, label) : m.squareErrorCost(pred, label);
  std::string loss = m.mean(cost);
  if (classify)
    m.addMetric(m.accuracy(pred, label));
  // What a served model returns: class probabilities, or the regression's value.
  m.addPrediction(classify ? m.activation(pred, "softmax") : pred);
  auto opt = makeRecipeOptimizer(s);
  if (!opt)
    return opt.takeError();
  if (auto grads = (*opt)->minimize(m, loss); !grads)
    return grads.takeError();
  if (!s.format.empty()) {
    if (s.data.empty())
      return makeError("--format {0} needs --data files", s.format);
    bool uci = s.format == "uci_housing"; // its test rows are a split of the same file
    if (s.schema) { // a schema's feed gives the label first
      m.setTrainFeed(recipeFeed(s, s.data, {label, x}, ""));
      if (!s.testData.empty())
        m.setTestFeed(recipeFeed(s, s.testData, {label, x}, ""));
      if (llvm::Error err = m.status())
        return err;
      return m;
    }
    m.setTrainFeed(recipeFeed(s, s.data, {x, label}, uci ? "train" : ""));
    if (uci && s.testData.empty())
      m.setTestFeed(recipeFeed(s, s.data, {x, label}, "test"));
    else if (!s.testData.empty())
      m.setTestFeed(recipeFeed(s, s.testData, {x, label}, uci ? "test" : ""));
  }
  if (llvm::Error err = m.status())
    return err;
  return m;
}

} // namespace oar
