// Running an exported model.
#include "serving/predictor.h"

#include <omp.h>

#include <mutex>
#include <optional>
#include <utility>

#include "executor/executor.h"
#include "executor/finite_check.h"
#include "ir/names.h"
#include "serving/bf16_layer.h"
#include "serving/export.h"
#include "serving/fuse_fc.h"
#include "feed/schema_source.h"
#include "serving/key_index.h"
#include "serving/row_encoder.h"
#include "serving/sparse_input_layer.h"
#include "support/error.h"

#include "llvm/ADT/StringSet.h"

namespace oar {

struct Predictor::Impl {
  proto::Program program;
  /// What predict() runs: the program with its layers fused (PredictorOptions::fuseLayers).
  proto::Program run;
  std::vector<std::string> inputs, outputs;
  /// The model's vars (params, tables' keys, values and index), shared read-only by every call.
  std::vector<std::pair<std::string, Tensor>> model;
  PredictorOptions options;
  /// What predictRows() encodes raw rows with, or why the model cannot take them.
  std::optional<RowEncoder> rowEncoder;
  std::string noRowEncoder;
  /// Scopes of finished calls, each holding the model's vars and its last call's intermediate
  /// tensors: a call takes one (or makes one) and gives it back.
  mutable std::mutex poolMutex;
  mutable std::vector<std::unique_ptr<Scope>> pool;

  std::unique_ptr<Scope> takeScope() const {
    {
      std::lock_guard<std::mutex> lock(poolMutex);
      if (!pool.empty()) {
        std::unique_ptr<Scope> s = std::move(pool.back());
        pool.pop_back();
        return s;
      }
    }
    auto s = std::make_unique<Scope>(); // copies share the model's buffers, which no op writes
    for (const auto &[name, t] : model)
      s->get(name) = t;
    return s;
  }
  void giveBack(std::unique_ptr<Scope> s) const {
    std::lock_guard<std::mutex> lock(poolMutex);
    pool.push_back(std::move(s));
  }
};

static void addInput(proto::Op &op, const std::string &slot, const std::string &var) {
  proto::Slot *s = op.add_inputs();
  s->set_slot(slot);
  s->add_names(var);
}

/// The f32 param `name` of `model`, or nullptr.
static const Tensor *f32Param(const std::vector<std::pair<std::string, Tensor>> &model,
                              const std::string &name) {
  auto param = llvm::find_if(model, [&](const auto &var) { return var.first == name; });
  return param != model.end() && param->second.dtype() == proto::F32 ? &param->second : nullptr;
}

/// Gives each fc op of `run` its weight in bf16, a var added to `model`.
static llvm::Error useBf16Layers(proto::Program &run,
                                 std::vector<std::pair<std::string, Tensor>> &model) {
  if (llvm::Error err = checkBf16Layers())
    return err;
  proto::Block &block = *run.mutable_blocks(0);
  for (proto::Op &op : *block.mutable_ops()) {
    if (op.type() != "fc")
      continue;
    std::string w = opInputs(op, "W")[0];
    const Tensor *f32 = f32Param(model, w);
    if (!f32)
      continue; // not one of the export's f32 params: the layer stays f32
    bool packed = llvm::any_of(model, [&](const auto &var) { return var.first == bf16Name(w); });
    if (f32->rank() != 2 || packed) { // another layer's weight too: packed once
      if (packed)
        addInput(op, "WBf16", bf16Name(w));
      continue;
    }
    auto bf16 = packBf16Weights(f32->data<float>(), f32->dim(0), f32->dim(1));
    if (!bf16)
      return addContext(bf16.takeError(), w);
    declareVar(block, bf16Name(w), proto::BF16, bf16->dims());
    addInput(op, "WBf16", bf16Name(w));
    model.emplace_back(bf16Name(w), std::move(*bf16));
  }
  return llvm::Error::success();
}

/// Gives each f32 fc op of `run` whose input a relu wrote its weight and bias padded for
/// sparseInputLayer, a var added to `model`.
static void useSparseInputLayers(proto::Program &run,
                                 std::vector<std::pair<std::string, Tensor>> &model) {
  proto::Block &block = *run.mutable_blocks(0);
  llvm::StringSet<> reluOutputs;
  for (proto::Op &op : *block.mutable_ops()) {
    bool relu = op.type() == "relu" || (op.type() == "fc" && findAttr(op, "activation") &&
                                        findAttr(op, "activation")->s() == "relu");
    std::string input = op.type() == "fc" ? opInputs(op, "Input")[0] : "";
    if (relu)
      for (const std::string &out : opOutputs(op, "Out"))
        reluOutputs.insert(out);
    if (input.empty() || !reluOutputs.contains(input) || op.inputs_size() != 3)
      continue; // not fed by a relu, or already given other weights (bf16)
    std::string w = opInputs(op, "W")[0];
    const Tensor *weight = f32Param(model, w), *bias = f32Param(model, opInputs(op, "Bias")[0]);
    // A layer narrower than a vector gains nothing; a weight another layer shares is padded
    // once, with that layer's bias: this one keeps the GEMM. So does a weight with an infinity
    // or a NaN, which the GEMM multiplies by the input's zeros into NaNs and this would skip.
    if (!weight || !bias || weight->rank() != 2 || weight->dim(0) < 1 || weight->dim(1) < 16 ||
        !sparseInputFits(weight->dim(0), weight->dim(1)) || f32Param(model, paddedName(w)) ||
        firstNonFinite(*weight))
      continue;
    Tensor padded =
        padWeightRows(weight->data<float>(), weight->dim(0), weight->dim(1), bias->data<float>());
    declareVar(block, paddedName(w), proto::F32, padded.dims());
    addInput(op, "WPadded", paddedName(w));
    model.emplace_back(paddedName(w), std::move(padded));
  }
}

Predictor::Predictor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Predictor::~Predictor() = default;

llvm::Expected<std::unique_ptr<Predictor>> Predictor::load(llvm::StringRef dir,
                                                           PredictorOptions options) {
  auto model = readExport(dir);
  if (!model)
    return model.takeError();
  auto predictor = fromExport(std::move(*model), options);
  if (!predictor)
    return addContext(predictor.takeError(), dir);
  return predictor;
}

llvm::Expected<std::unique_ptr<Predictor>> Predictor::fromExport(ExportedModel model,
                                                                 PredictorOptions options) {
  if (options.threadsPerCall < 1)
    return makeError("threadsPerCall {0} must be at least 1", options.threadsPerCall);
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->program = std::move(model.program);
  impl->run = impl->program;
  if (options.fuseLayers)
    fuseFullyConnected(impl->run);
  impl->inputs.assign(impl->program.inputs().begin(), impl->program.inputs().end());
  impl->outputs.assign(impl->program.predictions().begin(), impl->program.predictions().end());
  if (impl->outputs.empty())
    return makeError("the export names no output");
  for (auto &[name, t] : model.params)
    impl->model.emplace_back(name, std::move(t));
  if (options.bf16Layers && !options.fuseLayers)
    return makeError("bf16Layers runs the fused layers in bfloat16: it needs fuseLayers");
  if (options.bf16Layers)
    if (llvm::Error err = useBf16Layers(impl->run, impl->model))
      return std::move(err);
  if (options.sparseInputs && options.fuseLayers && !options.bf16Layers && sparseInputLayers())
    useSparseInputLayers(impl->run, impl->model);
  for (auto &[name, t] : model.tables) {
    // Keys 0..n-1 (a table trained dense) are their own rows: no index to build.
    const auto *k = static_cast<const uint64_t *>(t.keys.raw());
    int64_t n = t.keys.numel();
    bool direct = n > 0 && k[0] == 0 && k[n - 1] == static_cast<uint64_t>(n - 1);
    impl->model.emplace_back(tableIndexName(name),
                             direct ? Tensor(proto::I32, {0}) : buildKeyIndex(t.keys));
    impl->model.emplace_back(tableKeysName(name), std::move(t.keys));
    impl->model.emplace_back(tableValuesName(name), std::move(t.values));
  }
  const proto::DataFeed &feed = isSchemaFeed(impl->program.test_feed())
                                    ? impl->program.test_feed()
                                    : impl->program.train_feed();
  auto encoder = RowEncoder::make(feed, impl->program.blocks(0), impl->inputs);
  if (encoder)
    impl->rowEncoder = std::move(*encoder);
  else
    impl->noRowEncoder = llvm::toString(encoder.takeError());
  return std::unique_ptr<Predictor>(new Predictor(std::move(impl)));
}

const std::vector<std::string> &Predictor::inputs() const { return impl_->inputs; }
const std::vector<std::string> &Predictor::outputs() const { return impl_->outputs; }

const proto::Program &Predictor::program() const { return impl_->program; }

DType Predictor::inputType(size_t i) const {
  return findVar(impl_->program.blocks(0), impl_->inputs[i])->type().dtype();
}

std::vector<int64_t> Predictor::inputDims(size_t i) const {
  const proto::Var *v = findVar(impl_->program.blocks(0), impl_->inputs[i]);
  return std::vector<int64_t>(v->type().dims().begin(), v->type().dims().end());
}

llvm::Expected<std::vector<Tensor>>
Predictor::predictRows(llvm::ArrayRef<std::string> columns,
                       llvm::ArrayRef<std::vector<std::string>> rows) const {
  if (!impl_->rowEncoder)
    return makeError("predictRows: {0}", impl_->noRowEncoder);
  auto inputs = impl_->rowEncoder->encode(columns, rows);
  if (!inputs)
    return addContext(inputs.takeError(), "predictRows");
  return predict(*inputs);
}

llvm::Expected<std::vector<Tensor>> Predictor::predict(const std::vector<Tensor> &batch) const {
  const Impl &m = *impl_;
  if (batch.size() != m.inputs.size())
    return makeError("predict: {0} tensors for {1} inputs ({2})", batch.size(), m.inputs.size(),
                     llvm::join(m.inputs, ", "));
  int64_t rows = -1;
  for (size_t i = 0; i < batch.size(); ++i) {
    const Tensor &t = batch[i];
    const proto::Var *v = findVar(m.program.blocks(0), m.inputs[i]);
    bool fits = t.initialized() && t.dtype() == v->type().dtype() &&
                static_cast<int>(t.rank()) == v->type().dims_size() && t.rank() > 0;
    for (size_t d = 1; fits && d < t.rank(); ++d)
      fits = v->type().dims(d) < 0 || v->type().dims(d) == t.dim(d);
    if (!fits)
      return makeError("predict: input {0} is {1}{2} but the model takes {3}", m.inputs[i],
                       t.initialized() ? dtypeName(t.dtype()) : "nothing", dimsString(t.dims()),
                       typeString(v->type()));
    if (rows >= 0 && t.dim(0) != rows)
      return makeError("predict: input {0} has {1} rows but {2} has {3}", m.inputs[i], t.dim(0),
                       m.inputs[0], rows);
    rows = t.dim(0);
  }
  std::unique_ptr<Scope> scope = m.takeScope();
  for (size_t i = 0; i < batch.size(); ++i)
    scope->get(m.inputs[i]) = batch[i];
  // OpenMP's thread count is per calling thread: each call sets its own.
  omp_set_num_threads(m.options.threadsPerCall);
  Executor exec;
  llvm::Error err = exec.run(m.run, *scope);
  std::vector<Tensor> out;
  for (const std::string &o : m.outputs) {
    Tensor *t = err ? nullptr : scope->find(o);
    if (!err && (!t || !t->initialized()))
      err = makeError("the model did not compute {0}", o);
    if (err)
      break;
    // The caller's now (the next call makes another), unless it is one of the model's own.
    bool own = llvm::any_of(m.model, [&](const auto &var) { return var.first == o; });
    out.push_back(onHost(own ? *t : std::exchange(*t, Tensor())));
  }
  // The scope keeps no reference to the caller's rows.
  for (const std::string &in : m.inputs)
    scope->get(in) = Tensor();
  m.giveBack(std::move(scope));
  if (err)
    return addContext(std::move(err), "predict");
  return out;
}

} // namespace oar
