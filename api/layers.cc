// The layers API.
#include "api/layers.h"

#include <cmath>

#include "ir/error.h"
#include "ops/op_registry.h"

namespace oar {

ModelBuilder::ModelBuilder(int64_t seed)
    : main_(newProgram()), startup_(newProgram()), seed_(seed) {}

std::string ModelBuilder::uniqueLayerName(llvm::StringRef layer) {
  int &n = layerCounts_[layer.str()];
  return llvm::formatv("{0}_{1}", layer, n++).str();
}

std::string ModelBuilder::data(llvm::StringRef name, llvm::ArrayRef<int64_t> dims, DType dtype) {
  std::vector<int64_t> full{-1};
  full.insert(full.end(), dims.begin(), dims.end());
  proto::Var &v = declareVar(*main_.mutable_blocks(0), name, dtype, full);
  v.set_stop_gradient(true);
  return name.str();
}

llvm::Expected<std::vector<std::string>>
ModelBuilder::appendOp(llvm::StringRef type, const SlotMap &inputs,
                       const std::vector<std::string> &outputSlots, const AttrList &attrs,
                       llvm::StringRef prefix) {
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
    outputs.push_back({slot, {names.back()}});
  }
  proto::Op op = makeOp(type, inputs, outputs, attrs);
  // Declare the outputs with the types shape inference gives from the declared inputs.
  std::map<std::string, ops::VarType> types;
  for (const auto &[slot, vars] : inputs)
    for (const std::string &v : vars) {
      const proto::Var *decl = findVar(block, v);
      if (!decl)
        return makeError("{0}: input {1} ({2}) is not declared", type, slot, v);
      ops::VarType t;
      t.dtype = decl->type().dtype();
      t.dims.assign(decl->type().dims().begin(), decl->type().dims().end());
      types[v] = t;
    }
  ops::InferContext ctx(op, *schema, [&](llvm::StringRef n) -> const ops::VarType * {
    auto it = types.find(n.str());
    return it == types.end() ? nullptr : &it->second;
  });
  if (schema->infer())
    if (llvm::Error err = schema->infer()(ctx))
      return addContext(std::move(err), type);
  for (const auto &[name, t] : ctx.results())
    declareVar(block, name, t.dtype, t.dims);
  *block.add_ops() = std::move(op);
  return names;
}

std::string ModelBuilder::appendLayerOp(llvm::StringRef type, const SlotMap &inputs,
                                        llvm::StringRef outputSlot, const AttrList &attrs,
                                        llvm::StringRef prefix) {
  llvm::ExitOnError exitOnErr("oar layers: error: ");
  return exitOnErr(appendOp(type, inputs, {outputSlot.str()}, attrs, prefix))[0];
}

std::string ModelBuilder::createParameter(llvm::StringRef name, llvm::ArrayRef<int64_t> dims,
                                          const Initializer &init, int64_t fanIn, int64_t fanOut) {
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
  declareVar(*main_.mutable_blocks(0), name, dtype, dims).set_persistable(true);
  declareVar(*startup_.mutable_blocks(0), name, dtype, dims).set_persistable(true);
  std::vector<int64_t> shape(dims.begin(), dims.end());
  *startup_.mutable_blocks(0)->add_ops() =
      makeOp("fill_constant", {}, {{"Out", {name.str()}}},
             {{"shape", shape}, {"dtype", static_cast<int64_t>(dtype)}, {"value", value}});
  return name.str();
}

static int64_t dimOf(const proto::Program &p, llvm::StringRef var, int i) {
  const proto::Var *v = findVar(p.blocks(0), var);
  assert(v && "layer input must be declared");
  int rank = v->type().dims_size();
  return v->type().dims(i < 0 ? rank + i : i);
}

std::string ModelBuilder::activation(llvm::StringRef x, llvm::StringRef act) {
  if (act.empty())
    return x.str();
  return appendLayerOp(act, {{"X", {x.str()}}}, "Out", {}, "");
}

std::string ModelBuilder::fc(llvm::StringRef x, int64_t size, llvm::StringRef act,
                             Initializer weightInit) {
  std::string layer = uniqueLayerName("fc");
  const proto::Var *xv = findVar(main_.blocks(0), x);
  assert(xv && "fc input must be declared");
  int64_t in = 1;
  for (int i = 1; i < xv->type().dims_size(); ++i)
    in *= xv->type().dims(i);
  std::string w = createParameter(layer + ".w_0", {in, size}, weightInit, in, size);
  std::string b = createParameter(layer + ".b_0", {size}, Initializer::constant(0));
  std::string h = appendLayerOp("mul", {{"X", {x.str()}}, {"Y", {w}}}, "Out",
                                {{"x_num_col_dims", int64_t(1)}}, layer);
  std::string out = appendLayerOp("elementwise_add", {{"X", {h}}, {"Y", {b}}}, "Out",
                                  {{"axis", int64_t(1)}}, layer);
  return act.empty() ? out : appendLayerOp(act, {{"X", {out}}}, "Out", {}, layer);
}

std::string ModelBuilder::embedding(llvm::StringRef ids, int64_t vocab, int64_t width,
                                    bool isSparse, bool isDistributed) {
  std::string layer = uniqueLayerName("embedding");
  std::string w = createParameter(layer + ".w_0", {vocab, width}, {}, vocab, width);
  return appendLayerOp("lookup_table", {{"W", {w}}, {"Ids", {ids.str()}}}, "Out",
                       {{"is_sparse", isSparse}, {"is_distributed", isDistributed}}, layer);
}

std::string ModelBuilder::conv2d(llvm::StringRef input, int64_t numFilters, int64_t filterSize,
                                 int64_t stride, int64_t padding, llvm::StringRef act) {
  std::string layer = uniqueLayerName("conv2d");
  int64_t channels = dimOf(main_, input, 1);
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

std::string ModelBuilder::reshape(llvm::StringRef x, std::vector<int64_t> shape) {
  return appendLayerOp("reshape", {{"X", {x.str()}}}, "Out", {{"shape", shape}},
                       uniqueLayerName("reshape"));
}

std::string ModelBuilder::squareErrorCost(llvm::StringRef input, llvm::StringRef label) {
  return appendLayerOp("square_error_cost", {{"X", {input.str()}}, {"Y", {label.str()}}}, "Out", {},
                       uniqueLayerName("square_error_cost"));
}

std::string ModelBuilder::softmaxWithCrossEntropy(llvm::StringRef logits, llvm::StringRef label) {
  llvm::ExitOnError exitOnErr("oar layers: error: ");
  auto outs = exitOnErr(
      appendOp("softmax_with_cross_entropy", {{"Logits", {logits.str()}}, {"Label", {label.str()}}},
               {"Softmax", "Loss"}, {}, uniqueLayerName("softmax_with_cross_entropy")));
  return outs[1];
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

std::string ModelBuilder::mean(llvm::StringRef x) {
  return appendLayerOp("mean", {{"X", {x.str()}}}, "Out", {}, uniqueLayerName("mean"));
}

std::string ModelBuilder::accuracy(llvm::StringRef scores, llvm::StringRef label) {
  return appendLayerOp("accuracy", {{"Out", {scores.str()}}, {"Label", {label.str()}}}, "Accuracy",
                       {}, uniqueLayerName("accuracy"));
}

} // namespace oar
