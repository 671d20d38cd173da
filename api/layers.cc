// The layers API.
#include "api/layers.h"

#include <cmath>
#include <set>

#include "feed/data_feed.h"
#include "ops/op_registry.h"
#include "ops/verify.h"
#include "support/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

/// The activations a layer may name (each is an op of that type).
static constexpr llvm::StringRef kActivations[] = {"relu", "sigmoid", "tanh", "softmax"};

ModelBuilder::ModelBuilder(int64_t seed)
    : main_(newProgram()), startup_(newProgram()), seed_(seed) {}

std::string ModelBuilder::uniqueLayerName(llvm::StringRef layer) {
  int &n = layerCounts_[layer.str()];
  return llvm::formatv("{0}_{1}", layer, n++).str();
}

void ModelBuilder::fail(llvm::Error err) {
  std::string text = llvm::toString(std::move(err));
  if (firstError_.empty())
    firstError_ = text.empty() ? "model building failed" : text;
}

llvm::Error ModelBuilder::status() const {
  if (firstError_.empty())
    return llvm::Error::success();
  return makeError("{0}", firstError_);
}

const proto::Var *ModelBuilder::inputVar(llvm::StringRef layer, llvm::StringRef name) {
  if (failed())
    return nullptr;
  const proto::Var *v = findVar(main_.blocks(0), name);
  if (!v)
    fail(makeError("{0}: input var \"{1}\" is not declared", layer, name));
  return v;
}

bool ModelBuilder::checkNewName(llvm::StringRef layer, llvm::StringRef name) {
  if (failed())
    return false;
  if (name.empty()) {
    fail(makeError("{0}: a var needs a name", layer));
    return false;
  }
  if (findVar(main_.blocks(0), name) || findVar(startup_.blocks(0), name)) {
    fail(makeError("{0}: var \"{1}\" is declared already; names must be unique", layer, name));
    return false;
  }
  return true;
}

void ModelBuilder::setLoss(llvm::StringRef loss) {
  if (inputVar("setLoss", loss))
    main_.set_loss(loss.str());
}

void ModelBuilder::addMetric(llvm::StringRef metric) {
  if (inputVar("addMetric", metric))
    main_.add_metrics(metric.str());
}

void ModelBuilder::addPrediction(llvm::StringRef var) {
  if (inputVar("addPrediction", var))
    main_.add_predictions(var.str());
}

void ModelBuilder::setFeed(const char *which, const FeedSpec &spec, proto::DataFeed &dst) {
  if (failed())
    return;
  proto::DataFeed feed;
  feed.set_format(spec.format);
  for (const std::string &f : spec.files)
    feed.add_files(f);
  for (const std::string &c : spec.columns)
    feed.add_columns(c);
  feed.set_batch_size(spec.batchSize);
  feed.set_epochs(spec.epochs);
  feed.set_shuffle(spec.shuffle);
  feed.set_seed(spec.seed);
  feed.set_split(spec.split);
  feed.set_skip_header(spec.skipHeader);
  feed.set_limit(spec.limit);
  feed.set_shuffle_buffer(spec.shuffleBuffer);
  if (spec.schema)
    *feed.mutable_schema() = *spec.schema;
  if (llvm::Error err = checkFeed(feed, main_.blocks(0)))
    return fail(addContext(std::move(err), which));
  dst = std::move(feed);
}

void ModelBuilder::setTrainFeed(const FeedSpec &feed) {
  setFeed("setTrainFeed", feed, *main_.mutable_train_feed());
}

void ModelBuilder::setTestFeed(const FeedSpec &feed) {
  setFeed("setTestFeed", feed, *main_.mutable_test_feed());
  if (!failed())
    main_.mutable_test_feed()->set_shuffle(false); // scoring reads the rows once, in order
}

llvm::Error ModelBuilder::save(llvm::StringRef dir, llvm::StringRef origin, bool alsoText) const {
  if (llvm::Error err = status())
    return err;
  if (llvm::Error err = verifyProgram(main_, "main"))
    return err;
  if (llvm::Error err = verifyProgram(startup_, "startup"))
    return err;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  for (auto [prog, name] : {std::pair{&main_, "main"}, std::pair{&startup_, "startup"}}) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, std::string(name) + ".pb");
    if (llvm::Error err = saveProgram(*prog, path, origin))
      return err;
    if (alsoText) {
      llvm::sys::path::replace_extension(path, ".pbtxt");
      if (llvm::Error err = saveProgram(*prog, path, origin))
        return err;
    }
  }
  return llvm::Error::success();
}

std::string ModelBuilder::data(llvm::StringRef name, llvm::ArrayRef<int64_t> dims, DType dtype) {
  if (!checkNewName("data", name))
    return "";
  if (llvm::any_of(dims, [](int64_t d) { return d <= 0; })) {
    fail(makeError("data {0}: dims {1} must be positive (the batch dimension is added)", name,
                   dimsString(dims)));
    return "";
  }
  std::vector<int64_t> full{-1};
  full.insert(full.end(), dims.begin(), dims.end());
  proto::Var &v = declareVar(*main_.mutable_blocks(0), name, dtype, full);
  v.set_stop_gradient(true);
  return name.str();
}

llvm::Expected<std::vector<std::string>>
ModelBuilder::appendOp(llvm::StringRef type, const SlotMap &inputs,
                       const std::vector<std::string> &outputSlots, const AttrList &attrs,
                       llvm::StringRef prefix, const SlotMap &inPlace) {
  if (llvm::Error err = status())
    return err;
  const ops::OpSchema *schema = ops::lookupOp(type);
  if (!schema)
    return makeError("unknown op type \"{0}\"", type);
  proto::Block &block = *main_.mutable_blocks(0);
  std::string base = prefix.empty() ? type.str() : prefix.str();
  SlotMap outputs;
  std::vector<std::string> names;
  for (const std::string &slot : outputSlots) {
    int &k = tmpCounts_[base];
    names.push_back(llvm::formatv("{0}.tmp_{1}", base, k++).str());
    if (!outputs.empty() && outputs.back().first == slot) // a slot named again: another var of it
      outputs.back().second.push_back(names.back());
    else
      outputs.push_back({slot, {names.back()}});
  }
  std::set<std::string> existing;
  for (const auto &[slot, vars] : inPlace) {
    outputs.push_back({slot, vars});
    existing.insert(vars.begin(), vars.end());
  }
  proto::Op op = makeOp(type, inputs, outputs, attrs);
  // Declare the outputs with the types shape inference gives from the declared inputs.
  std::map<std::string, ops::VarType> types;
  for (const auto &[slot, vars] : inputs)
    for (const std::string &v : vars) {
      const proto::Var *decl = findVar(block, v);
      if (!decl)
        return makeError("{0}: input {1} var \"{2}\" is not declared", type, slot, v);
      types[v] = ops::varTypeOf(*decl);
    }
  ops::InferContext ctx(op, *schema, [&](llvm::StringRef n) -> const ops::VarType * {
    auto it = types.find(n.str());
    return it == types.end() ? nullptr : &it->second;
  });
  if (schema->infer())
    if (llvm::Error err = schema->infer()(ctx))
      return addContext(std::move(err), type);
  for (const auto &[name, t] : ctx.results())
    if (!existing.count(name))
      declareVar(block, name, t.dtype, t.dims).set_kind(t.kind);
  *block.add_ops() = std::move(op);
  return names;
}

std::string ModelBuilder::appendLayerOp(llvm::StringRef type, const SlotMap &inputs,
                                        llvm::StringRef outputSlot, const AttrList &attrs,
                                        llvm::StringRef prefix) {
  auto outs = appendOp(type, inputs, {outputSlot.str()}, attrs, prefix);
  if (!outs) {
    fail(addContext(outs.takeError(), prefix.empty() ? type : prefix));
    return "";
  }
  return (*outs)[0];
}

std::string ModelBuilder::createParameter(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                                          const Initializer &init, int64_t fanIn, int64_t fanOut) {
  if (!checkNewName("createParameter", name))
    return "";
  if (dims.empty() || llvm::any_of(dims, [](int64_t d) { return d <= 0; })) {
    fail(makeError("parameter {0}: dims {1} must be positive", name, dimsString(dims)));
    return "";
  }
  proto::Var &v = declareVar(*main_.mutable_blocks(0), name, proto::F32, dims);
  v.set_persistable(true);
  v.set_is_parameter(true);
  v.set_trainable(true);
  proto::Var &sv = declareVar(*startup_.mutable_blocks(0), name, proto::F32, dims);
  sv.set_persistable(true);
  std::vector<int64_t> shape(dims.begin(), dims.end());
  int64_t seed = seed_ * 1000 + ++nextSeed_;
  AttrList attrs{{"shape", shape}, {"dtype", static_cast<int64_t>(proto::F32)}};
  std::string op = "uniform_random";
  switch (init.kind) {
  case Initializer::XavierUniform: {
    float limit = std::sqrt(6.0f / static_cast<float>(fanIn + fanOut));
    attrs.insert(attrs.end(), {{"min", -limit}, {"max", limit}, {"seed", seed}});
    break;
  }
  case Initializer::Uniform:
    attrs.insert(attrs.end(), {{"min", init.a}, {"max", init.b}, {"seed", seed}});
    break;
  case Initializer::Normal:
    op = "gaussian_random";
    attrs.insert(attrs.end(), {{"mean", init.a}, {"std", init.b}, {"seed", seed}});
    break;
  case Initializer::Constant:
    op = "fill_constant";
    attrs.push_back({"value", init.a});
    break;
  }
  *startup_.mutable_blocks(0)->add_ops() = makeOp(op, {}, {{"Out", {name.str()}}}, attrs);
  return name.str();
}

std::string ModelBuilder::createPersistable(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                                            float value, DType dtype) {
  if (!checkNewName("createPersistable", name))
    return "";
  declareVar(*main_.mutable_blocks(0), name, dtype, dims).set_persistable(true);
  declareVar(*startup_.mutable_blocks(0), name, dtype, dims).set_persistable(true);
  std::vector<int64_t> shape(dims.begin(), dims.end());
  *startup_.mutable_blocks(0)->add_ops() =
      makeOp("fill_constant", {}, {{"Out", {name.str()}}},
             {{"shape", shape}, {"dtype", static_cast<int64_t>(dtype)}, {"value", value}});
  return name.str();
}

/// Records an error unless `act` is "" or a known activation.
static llvm::Error checkActivation(llvm::StringRef layer, llvm::StringRef act) {
  if (act.empty() || llvm::is_contained(kActivations, act))
    return llvm::Error::success();
  return makeError("{0}: unknown activation \"{1}\" (use relu, sigmoid, tanh, softmax or \"\")",
                   layer, act);
}

std::string ModelBuilder::activation(llvm::StringRef x, llvm::StringRef act) {
  if (llvm::Error err = checkActivation("activation", act)) {
    fail(std::move(err));
    return "";
  }
  if (!inputVar("activation", x))
    return "";
  if (act.empty())
    return x.str();
  return appendLayerOp(act, {{"X", {x.str()}}}, "Out", {}, "");
}

std::string ModelBuilder::fc(llvm::StringRef x, int64_t size, llvm::StringRef act,
                             Initializer weightInit, bool bias) {
  std::string layer = uniqueLayerName("fc");
  const proto::Var *xv = inputVar(layer, x);
  if (!xv)
    return "";
  if (size <= 0 || xv->type().dims_size() < 2) {
    fail(makeError("{0}: size must be positive and the input batched (got size {1}, input {2} "
                   "of {3})",
                   layer, size, x, typeString(xv->type())));
    return "";
  }
  if (llvm::Error err = checkActivation(layer, act)) {
    fail(std::move(err));
    return "";
  }
  int64_t in = 1;
  for (int i = 1; i < xv->type().dims_size(); ++i)
    in *= xv->type().dims(i);
  std::string w = createParameter(layer + ".w_0", {in, size}, weightInit, in, size);
  std::string out = appendLayerOp("mul", {{"X", {x.str()}}, {"Y", {w}}}, "Out",
                                  {{"x_num_col_dims", int64_t(1)}}, layer);
  if (bias) {
    std::string b = createParameter(layer + ".b_0", {size}, Initializer::constant(0));
    out = appendLayerOp("elementwise_add", {{"X", {out}}, {"Y", {b}}}, "Out",
                        {{"axis", int64_t(1)}}, layer);
  }
  return act.empty() ? out : appendLayerOp(act, {{"X", {out}}}, "Out", {}, layer);
}

/// A parameter that the optimizer leaves alone (batch norm's running statistics).
static void markNotTrained(proto::Program &main, llvm::StringRef name) {
  for (proto::Var &v : *main.mutable_blocks(0)->mutable_vars())
    if (v.name() == name) {
      v.set_trainable(false);
      v.set_stop_gradient(true);
    }
}

std::string ModelBuilder::batchNorm(llvm::StringRef x, llvm::StringRef act, float momentum,
                                    float epsilon) {
  std::string layer = uniqueLayerName("batch_norm");
  const proto::Var *xv = inputVar(layer, x);
  if (!xv)
    return "";
  if (xv->type().dims_size() < 2 || xv->type().dims(1) <= 0) {
    fail(makeError("{0}: the input {1} of {2} needs [batch, channels, ...]", layer, x,
                   typeString(xv->type())));
    return "";
  }
  if (llvm::Error err = checkActivation(layer, act)) {
    fail(std::move(err));
    return "";
  }
  int64_t channels = xv->type().dims(1);
  std::string scale = createParameter(layer + ".w_0", {channels}, Initializer::constant(1));
  std::string shift = createParameter(layer + ".b_0", {channels}, Initializer::constant(0));
  std::string mean = createParameter(layer + ".w_1", {channels}, Initializer::constant(0));
  std::string var = createParameter(layer + ".w_2", {channels}, Initializer::constant(1));
  markNotTrained(main_, mean);
  markNotTrained(main_, var);
  auto outs =
      appendOp("batch_norm",
               {{"X", {x.str()}},
                {"Scale", {scale}},
                {"Bias", {shift}},
                {"Mean", {mean}},
                {"Variance", {var}}},
               {"Y", "SavedMean", "SavedInvStd"}, {{"momentum", momentum}, {"epsilon", epsilon}},
               layer, {{"MeanOut", {mean}}, {"VarianceOut", {var}}});
  if (!outs) {
    fail(addContext(outs.takeError(), layer));
    return "";
  }
  std::string out = (*outs)[0];
  return act.empty() ? out : appendLayerOp(act, {{"X", {out}}}, "Out", {}, layer);
}

std::string ModelBuilder::layerNorm(llvm::StringRef x, llvm::StringRef act, float epsilon) {
  std::string layer = uniqueLayerName("layer_norm");
  const proto::Var *xv = inputVar(layer, x);
  if (!xv)
    return "";
  int64_t width = xv->type().dims_size() ? xv->type().dims(xv->type().dims_size() - 1) : 0;
  if (xv->type().dims_size() < 2 || width <= 0) {
    fail(makeError("{0}: the input {1} of {2} needs [rows..., features]", layer, x,
                   typeString(xv->type())));
    return "";
  }
  if (llvm::Error err = checkActivation(layer, act)) {
    fail(std::move(err));
    return "";
  }
  std::string scale = createParameter(layer + ".w_0", {width}, Initializer::constant(1));
  std::string shift = createParameter(layer + ".b_0", {width}, Initializer::constant(0));
  auto outs = appendOp("layer_norm", {{"X", {x.str()}}, {"Scale", {scale}}, {"Bias", {shift}}},
                       {"Y", "Mean", "InvStd"}, {{"epsilon", epsilon}}, layer);
  if (!outs) {
    fail(addContext(outs.takeError(), layer));
    return "";
  }
  std::string out = (*outs)[0];
  return act.empty() ? out : appendLayerOp(act, {{"X", {out}}}, "Out", {}, layer);
}

std::string ModelBuilder::dropout(llvm::StringRef x, float dropProb) {
  std::string layer = uniqueLayerName("dropout");
  if (!inputVar(layer, x))
    return "";
  // The op's own step counter: saved with the model, so a resumed run draws the same masks.
  std::string step = createPersistable(layer + ".step", {1}, 0, proto::I64);
  auto outs = appendOp("dropout", {{"X", {x.str()}}, {"Step", {step}}}, {"Out", "Mask"},
                       {{"dropout_prob", dropProb}, {"seed", seed_ * 1000 + ++nextSeed_}}, layer,
                       {{"StepOut", {step}}});
  if (!outs) {
    fail(addContext(outs.takeError(), layer));
    return "";
  }
  return (*outs)[0];
}

std::string ModelBuilder::embedding(llvm::StringRef ids, int64_t vocab, int64_t width,
                                    bool isSparse, bool isDistributed, Initializer init) {
  std::string layer = uniqueLayerName("embedding");
  if (!inputVar(layer, ids))
    return "";
  std::string w = createParameter(layer + ".w_0", {vocab, width}, init, vocab, width);
  return appendLayerOp("lookup_table", {{"W", {w}}, {"Ids", {ids.str()}}}, "Out",
                       {{"is_sparse", isSparse}, {"is_distributed", isDistributed}}, layer);
}

std::string ModelBuilder::conv2d(llvm::StringRef input, int64_t numFilters, int64_t filterSize,
                                 int64_t stride, int64_t padding, llvm::StringRef act) {
  std::string layer = uniqueLayerName("conv2d");
  const proto::Var *in = inputVar(layer, input);
  if (!in)
    return "";
  if (in->type().dims_size() != 4 || numFilters <= 0 || filterSize <= 0 || stride <= 0 ||
      padding < 0) {
    fail(makeError("{0}: needs an NCHW input and positive sizes (got input {1} of {2}, {3} "
                   "filters of size {4}, stride {5}, padding {6})",
                   layer, input, typeString(in->type()), numFilters, filterSize, stride, padding));
    return "";
  }
  if (llvm::Error err = checkActivation(layer, act)) {
    fail(std::move(err));
    return "";
  }
  int64_t channels = in->type().dims(1);
  // Paddle's default: N(0, 2 / (k*k*C)).
  float stddev = std::sqrt(2.0f / static_cast<float>(filterSize * filterSize * channels));
  std::string w = createParameter(layer + ".w_0", {numFilters, channels, filterSize, filterSize},
                                  Initializer::normal(0, stddev));
  std::string b = createParameter(layer + ".b_0", {numFilters}, Initializer::constant(0));
  std::string c = appendLayerOp("conv2d", {{"Input", {input.str()}}, {"Filter", {w}}}, "Output",
                                {{"strides", std::vector<int64_t>{stride, stride}},
                                 {"paddings", std::vector<int64_t>{padding, padding}}},
                                layer);
  std::string out = appendLayerOp("elementwise_add", {{"X", {c}}, {"Y", {b}}}, "Out",
                                  {{"axis", int64_t(1)}}, layer);
  return act.empty() ? out : appendLayerOp(act, {{"X", {out}}}, "Out", {}, layer);
}

std::string ModelBuilder::pool2d(llvm::StringRef input, int64_t size, llvm::StringRef type,
                                 int64_t stride) {
  std::string layer = uniqueLayerName("pool2d");
  if (type != "max" && type != "avg") {
    fail(makeError("{0}: unknown pooling type \"{1}\" (use max or avg)", layer, type));
    return "";
  }
  return appendLayerOp("pool2d", {{"X", {input.str()}}}, "Out",
                       {{"pooling_type", type.str()},
                        {"ksize", std::vector<int64_t>{size, size}},
                        {"strides", std::vector<int64_t>{stride, stride}}},
                       layer);
}

std::string ModelBuilder::concat(const std::vector<std::string> &inputs, int64_t axis) {
  return appendLayerOp("concat", {{"X", inputs}}, "Out", {{"axis", axis}},
                       uniqueLayerName("concat"));
}

std::vector<std::string> ModelBuilder::split(llvm::StringRef x, std::vector<int64_t> sections,
                                             int64_t axis) {
  std::string layer = uniqueLayerName("split");
  std::vector<std::string> outputs(sections.size(), "Out"); // one slot, a var per piece
  auto outs = appendOp("split", {{"X", {x.str()}}}, outputs,
                       {{"axis", axis}, {"sections", std::move(sections)}}, layer);
  if (!outs) {
    fail(addContext(outs.takeError(), layer));
    return {};
  }
  return *outs;
}

std::string ModelBuilder::reshape(llvm::StringRef x, std::vector<int64_t> shape) {
  return appendLayerOp("reshape", {{"X", {x.str()}}}, "Out", {{"shape", shape}},
                       uniqueLayerName("reshape"));
}

std::string ModelBuilder::squareErrorCost(llvm::StringRef input, llvm::StringRef label) {
  return appendLayerOp("square_error_cost", {{"X", {input.str()}}, {"Y", {label.str()}}}, "Out", {},
                       uniqueLayerName("square_error_cost"));
}

std::string ModelBuilder::softmaxWithCrossEntropy(llvm::StringRef logits, llvm::StringRef label) {
  std::string layer = uniqueLayerName("softmax_with_cross_entropy");
  auto outs =
      appendOp("softmax_with_cross_entropy", {{"Logits", {logits.str()}}, {"Label", {label.str()}}},
               {"Softmax", "Loss"}, {}, layer);
  if (!outs) {
    fail(addContext(outs.takeError(), layer));
    return "";
  }
  return (*outs)[1];
}

std::string ModelBuilder::crossEntropy(llvm::StringRef probs, llvm::StringRef label) {
  return appendLayerOp("cross_entropy", {{"X", {probs.str()}}, {"Label", {label.str()}}}, "Y", {},
                       uniqueLayerName("cross_entropy"));
}

std::string ModelBuilder::sigmoidCrossEntropyWithLogits(llvm::StringRef x, llvm::StringRef label) {
  return appendLayerOp("sigmoid_cross_entropy_with_logits",
                       {{"X", {x.str()}}, {"Label", {label.str()}}}, "Out", {},
                       uniqueLayerName("sigmoid_cross_entropy_with_logits"));
}

std::string ModelBuilder::idMod(llvm::StringRef ids, int64_t buckets) {
  return appendLayerOp("id_mod", {{"X", {ids.str()}}}, "Out", {{"num_buckets", buckets}},
                       uniqueLayerName("id_mod"));
}

std::string ModelBuilder::reduceSum(llvm::StringRef x, std::vector<int64_t> dims, bool keepDim) {
  return appendLayerOp("reduce_sum", {{"X", {x.str()}}}, "Out",
                       {{"dim", std::move(dims)}, {"keep_dim", keepDim}},
                       uniqueLayerName("reduce_sum"));
}

std::string ModelBuilder::elementwise(llvm::StringRef type, llvm::StringRef x, llvm::StringRef y,
                                      int64_t axis) {
  return appendLayerOp(type, {{"X", {x.str()}}, {"Y", {y.str()}}}, "Out", {{"axis", axis}},
                       uniqueLayerName(type));
}

std::string ModelBuilder::scale(llvm::StringRef x, float factor) {
  return appendLayerOp("scale", {{"X", {x.str()}}}, "Out", {{"scale", factor}},
                       uniqueLayerName("scale"));
}

std::string ModelBuilder::auc(llvm::StringRef probs, llvm::StringRef label, int64_t numThresholds) {
  std::string layer = uniqueLayerName("auc");
  std::string pos = createPersistable(layer + ".stat_pos", {numThresholds + 1}, 0, proto::I64);
  std::string neg = createPersistable(layer + ".stat_neg", {numThresholds + 1}, 0, proto::I64);
  std::string out = appendLayerOp("auc",
                                  {{"Predict", {probs.str()}},
                                   {"Label", {label.str()}},
                                   {"StatPos", {pos}},
                                   {"StatNeg", {neg}}},
                                  "AUC", {{"num_thresholds", numThresholds}}, layer);
  if (out.empty())
    return "";
  // The first auc is called `auc`, so the test line reads "auc 0.80".
  proto::Block &block = *main_.mutable_blocks(0);
  proto::Op &op = *block.mutable_ops()->rbegin();
  if (layer == "auc_0" && !findVar(block, "auc")) {
    findVar(block, out)->set_name("auc");
    op.mutable_outputs(0)->set_names(0, "auc");
    out = "auc";
  }
  // The histograms are updated in place: the op writes the vars it reads.
  for (auto [slot, var] : {std::pair{"StatPosOut", pos}, std::pair{"StatNegOut", neg}}) {
    proto::Slot &s = *op.add_outputs();
    s.set_slot(slot);
    s.add_names(var);
  }
  return out;
}

std::string ModelBuilder::mean(llvm::StringRef x) {
  return appendLayerOp("mean", {{"X", {x.str()}}}, "Out", {}, uniqueLayerName("mean"));
}

std::string ModelBuilder::accuracy(llvm::StringRef scores, llvm::StringRef label) {
  return appendLayerOp("accuracy", {{"Out", {scores.str()}}, {"Label", {label.str()}}}, "Accuracy",
                       {}, uniqueLayerName("accuracy"));
}

} // namespace oar
