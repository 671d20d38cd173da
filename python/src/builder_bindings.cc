// ModelBuilder from Python: every layer of api/layers.h, its initialisers and data feeds. A call
// that fails raises oar.Error with the builder's first error (the builder is then spent, as in
// C++: every later call fails the same way).
#include <pybind11/stl.h>

#include "api/layers.h"
#include "feed/schema.h"
#include "python/src/bindings.h"
#include "python/src/dtypes.h"
#include "python/src/errors.h"
#include "python/src/llvm_casters.h"

namespace py = pybind11;

namespace oar::python {

/// Raises the builder's first error, if it has one.
static void raiseIfFailed(const ModelBuilder &m) {
  if (m.failed())
    throwIfError(m.status());
}

/// A method of ModelBuilder bound so that a failure raises.
template <typename R, typename... Args> static auto raising(R (ModelBuilder::*method)(Args...)) {
  return [method](ModelBuilder &m, Args... args) -> R {
    if constexpr (std::is_void_v<R>) {
      (m.*method)(std::forward<Args>(args)...);
      raiseIfFailed(m);
    } else {
      R out = (m.*method)(std::forward<Args>(args)...);
      raiseIfFailed(m);
      return out;
    }
  };
}

/// A feed's schema from oar-model's flag forms or a schema file; none when all are empty.
static std::optional<proto::FeedSchema> feedSchema(const std::string &label,
                                                   const std::string &dense,
                                                   const std::string &sparse,
                                                   const std::string &schemaFile) {
  if (!schemaFile.empty())
    return unwrap(readSchemaFile(schemaFile));
  if (label.empty() && dense.empty() && sparse.empty())
    return std::nullopt;
  return unwrap(schemaFromFlags(label, dense, sparse));
}

static FeedSpec feedSpec(const py::kwargs &kw) {
  static const std::set<std::string> known = {
      "format", "files",   "columns", "batch_size", "epochs", "shuffle",        "seed",
      "split",  "skip_header", "limit", "shuffle_buffer", "label", "dense", "sparse", "schema_file"};
  for (auto item : kw)
    if (!known.count(py::str(item.first)))
      throw OarError("unknown feed setting \"" + std::string(py::str(item.first)) + "\"");
  auto get = [&](const char *key, auto fallback) {
    return kw.contains(key) ? kw[key].cast<decltype(fallback)>() : fallback;
  };
  FeedSpec f;
  f.format = get("format", std::string());
  f.files = get("files", std::vector<std::string>());
  f.columns = get("columns", std::vector<std::string>());
  f.batchSize = get("batch_size", int64_t(32));
  f.epochs = get("epochs", int64_t(1));
  f.shuffle = get("shuffle", false);
  f.seed = get("seed", int64_t(1));
  f.split = get("split", std::string());
  f.skipHeader = get("skip_header", false);
  f.limit = get("limit", int64_t(0));
  f.shuffleBuffer = get("shuffle_buffer", int64_t(0));
  f.schema = feedSchema(get("label", std::string()), get("dense", std::string()),
                        get("sparse", std::string()), get("schema_file", std::string()));
  return f;
}

static void bindInitializer(py::module_ &m) {
  py::class_<Initializer> init(m, "Initializer");
  py::enum_<Initializer::Kind>(init, "Kind")
      .value("XavierUniform", Initializer::XavierUniform)
      .value("Constant", Initializer::Constant)
      .value("Uniform", Initializer::Uniform)
      .value("Normal", Initializer::Normal);
  init.def(py::init<>())
      .def_static("xavier", [] { return Initializer{}; })
      .def_static("constant", &Initializer::constant)
      .def_static("uniform", &Initializer::uniform)
      .def_static("normal", &Initializer::normal)
      .def_readonly("kind", &Initializer::kind)
      .def_readonly("a", &Initializer::a)
      .def_readonly("b", &Initializer::b);
}

void bindBuilder(py::module_ &m) {
  bindInitializer(m);
  py::class_<ModelBuilder>(m, "ModelBuilder", "api/layers.h's ModelBuilder")
      .def(py::init<int64_t>(), py::arg("seed") = 1)
      .def_property_readonly("main", &ModelBuilder::main, py::return_value_policy::reference_internal)
      .def_property_readonly("startup", &ModelBuilder::startup,
                             py::return_value_policy::reference_internal)
      .def("data",
           [](ModelBuilder &b, const std::string &name, std::vector<int64_t> dims,
              const std::string &dtype) {
             std::string out = b.data(name, dims, dtypeFromName(dtype));
             raiseIfFailed(b);
             return out;
           },
           py::arg("name"), py::arg("dims"), py::arg("dtype") = "float32")
      .def("fc", raising(&ModelBuilder::fc), py::arg("x"), py::arg("size"), py::arg("act") = "",
           py::arg("init") = Initializer{}, py::arg("bias") = true)
      .def("batch_norm", raising(&ModelBuilder::batchNorm), py::arg("x"), py::arg("act") = "",
           py::arg("momentum") = 0.9f, py::arg("epsilon") = 1e-5f)
      .def("layer_norm", raising(&ModelBuilder::layerNorm), py::arg("x"), py::arg("act") = "",
           py::arg("epsilon") = 1e-5f)
      .def("dropout", raising(&ModelBuilder::dropout), py::arg("x"), py::arg("drop_prob"))
      .def("embedding", raising(&ModelBuilder::embedding), py::arg("ids"), py::arg("vocab"), py::arg("width"),
           py::arg("is_sparse") = false, py::arg("is_distributed") = false,
           py::arg("init") = Initializer{})
      .def("id_mod", raising(&ModelBuilder::idMod), py::arg("ids"), py::arg("buckets"))
      .def("reduce_sum", raising(&ModelBuilder::reduceSum), py::arg("x"), py::arg("dims"),
           py::arg("keep_dim") = false)
      .def("elementwise", raising(&ModelBuilder::elementwise), py::arg("type"), py::arg("x"), py::arg("y"),
           py::arg("axis") = -1)
      .def("scale", raising(&ModelBuilder::scale), py::arg("x"), py::arg("factor"))
      .def("auc", raising(&ModelBuilder::auc), py::arg("probs"), py::arg("label"),
           py::arg("num_thresholds") = 4095)
      .def("conv2d", raising(&ModelBuilder::conv2d), py::arg("input"), py::arg("num_filters"),
           py::arg("filter_size"), py::arg("stride") = 1, py::arg("padding") = 0,
           py::arg("act") = "")
      .def("pool2d", raising(&ModelBuilder::pool2d), py::arg("input"), py::arg("size"),
           py::arg("type") = "max", py::arg("stride") = 2)
      .def("concat", raising(&ModelBuilder::concat), py::arg("inputs"), py::arg("axis") = 1)
      .def("reshape", raising(&ModelBuilder::reshape), py::arg("x"), py::arg("shape"))
      .def("split", raising(&ModelBuilder::split), py::arg("x"), py::arg("sections"), py::arg("axis") = 1)
      .def("activation", raising(&ModelBuilder::activation), py::arg("x"), py::arg("act"))
      .def("square_error_cost", raising(&ModelBuilder::squareErrorCost), py::arg("input"), py::arg("label"))
      .def("softmax_with_cross_entropy", raising(&ModelBuilder::softmaxWithCrossEntropy), py::arg("logits"),
           py::arg("label"))
      .def("cross_entropy", raising(&ModelBuilder::crossEntropy), py::arg("input"), py::arg("label"))
      .def("sigmoid_cross_entropy_with_logits", raising(&ModelBuilder::sigmoidCrossEntropyWithLogits),
           py::arg("x"), py::arg("label"))
      .def("mean", raising(&ModelBuilder::mean), py::arg("x"))
      .def("accuracy", raising(&ModelBuilder::accuracy), py::arg("input"), py::arg("label"))
      .def("set_loss", raising(&ModelBuilder::setLoss))
      .def("add_metric", raising(&ModelBuilder::addMetric))
      .def("add_prediction", raising(&ModelBuilder::addPrediction))
      .def("set_train_feed",
           [](ModelBuilder &b, const py::kwargs &kw) {
             b.setTrainFeed(feedSpec(kw));
             raiseIfFailed(b);
           })
      .def("set_test_feed",
           [](ModelBuilder &b, const py::kwargs &kw) {
             b.setTestFeed(feedSpec(kw));
             raiseIfFailed(b);
           })
      .def("unique_layer_name", &ModelBuilder::uniqueLayerName)
      .def("status", [](const ModelBuilder &b) { throwIfError(b.status()); })
      .def("save",
           [](const ModelBuilder &b, const std::string &dir, bool alsoText) {
             throwIfError(b.save(dir, "written by oar (Python)", alsoText));
           },
           py::arg("dir"), py::arg("also_text") = false);
}

} // namespace oar::python
