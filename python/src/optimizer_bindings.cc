// Optimizers (api/optimizer.h) with their decay, clipping and schedules, and oar-model's recipes
// (api/recipes.h), from Python.
#include <pybind11/stl.h>

#include "api/recipes.h"
#include "feed/schema.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/llvm_casters.h"

namespace py = pybind11;

namespace oar::python {

static py::list minimize(Optimizer &opt, ModelBuilder &model, const std::string &loss,
                         const std::set<std::string> &noGrad) {
  py::list pairs;
  for (const ParamGrad &pg : unwrap(opt.minimize(model, loss, noGrad)))
    pairs.append(py::make_tuple(pg.param, pg.grad));
  return pairs;
}

static void bindOptimizerClasses(py::module_ &m) {
  py::class_<LrSchedule>(m, "LrSchedule")
      .def(py::init([](const std::string &type, int64_t warmup, int64_t decaySteps, float rate) {
             return LrSchedule{type, warmup, decaySteps, rate};
           }),
           py::arg("type") = "constant", py::arg("warmup_steps") = 0, py::arg("decay_steps") = 1,
           py::arg("decay_rate") = 1.0f)
      .def_readonly("type", &LrSchedule::type)
      .def_readonly("warmup_steps", &LrSchedule::warmupSteps)
      .def_readonly("decay_steps", &LrSchedule::decaySteps)
      .def_readonly("decay_rate", &LrSchedule::decayRate);
  py::class_<Optimizer>(m, "Optimizer")
      .def("minimize", &minimize, py::arg("model"), py::arg("loss"),
           py::arg("no_grad_set") = std::set<std::string>())
      .def("set_weight_decay", &Optimizer::setWeightDecay)
      .def("set_clip_global_norm", &Optimizer::setClipGlobalNorm)
      .def("set_schedule", &Optimizer::setSchedule)
      .def("set_schedule_tables", &Optimizer::setScheduleTables, py::arg("on"));
  py::class_<SGD, Optimizer>(m, "SGD").def(py::init<float>(), py::arg("learning_rate"));
  py::class_<Momentum, Optimizer>(m, "Momentum")
      .def(py::init<float, float, bool>(), py::arg("learning_rate"), py::arg("momentum"),
           py::arg("use_nesterov") = false);
  py::class_<Adam, Optimizer>(m, "Adam")
      .def(py::init<float, float, float, float>(), py::arg("learning_rate"),
           py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f, py::arg("epsilon") = 1e-8f);
  py::class_<AdamW, Adam>(m, "AdamW")
      .def(py::init<float, float, float, float, float>(), py::arg("learning_rate"),
           py::arg("weight_decay") = 0.01f, py::arg("beta1") = 0.9f, py::arg("beta2") = 0.999f,
           py::arg("epsilon") = 1e-8f);
  py::class_<Adagrad, Optimizer>(m, "Adagrad")
      .def(py::init<float, float, bool, float>(), py::arg("learning_rate"),
           py::arg("epsilon") = 1e-6f, py::arg("row_wise") = false,
           py::arg("initial_accumulator") = 0.0f);
}

/// RecipeSpec from keyword arguments named as oar-model's flags (in_ for --in, test_data, ...);
/// the CTR models get their defaults for what is not given, as oar-model gives them.
static RecipeSpec recipeSpec(const py::kwargs &kw) {
  RecipeSpec s;
  std::set<std::string> used;
  auto take = [&](const char *key, auto &field) {
    if (!kw.contains(key))
      return false;
    used.insert(key);
    field = kw[key].cast<std::decay_t<decltype(field)>>();
    return true;
  };
  take("model", s.model), take("in_", s.in), take("out", s.out), take("hidden", s.hidden);
  take("act", s.act), take("loss", s.loss);
  take("optimizer", s.optimizer), take("lr", s.lr);
  take("momentum", s.momentum), take("beta1", s.beta1), take("beta2", s.beta2);
  if (float epsilon; take("epsilon", epsilon))
    s.epsilon = epsilon;
  take("initial_accumulator", s.initialAccumulator);
  take("norm", s.norm), take("dropout", s.dropout);
  s.weightDecayGiven = take("weight_decay", s.weightDecay);
  take("clip_global_norm", s.clipGlobalNorm), take("lr_schedule", s.schedule);
  take("batch_size", s.batchSize);
  take("epochs", s.epochs), take("seed", s.seed), take("format", s.format), take("data", s.data);
  take("test_data", s.testData), take("shuffle", s.shuffle), take("emb_dim", s.embDim);
  take("vocab", s.vocab), take("distributed_tables", s.distributedTables);
  take("admit_after", s.admitAfter), take("evict_after", s.evictAfter);
  take("admit_probability", s.admitProbability);
  std::string label, dense, sparse, cross, schemaFile;
  bool rawDense = false;
  take("label", label), take("dense", dense), take("sparse", sparse), take("cross", cross);
  take("raw_dense", rawDense);
  take("schema_file", schemaFile);
  for (auto item : kw)
    if (!used.count(py::str(item.first)))
      throw OarError("unknown recipe setting \"" + std::string(py::str(item.first)) + "\"");
  if (!schemaFile.empty())
    s.schema = unwrap(readSchemaFile(schemaFile));
  else if (!label.empty() || !dense.empty() || !sparse.empty() || !cross.empty())
    s.schema = unwrap(schemaFromFlags(
        label.empty() && (s.format == "libffm" || s.format == "libsvm") ? "label" : label, dense,
        sparse, cross));
  llvm::StringSet<> given; // as oar-model's flags: batch_size is --batch-size
  for (std::string key : used) {
    std::replace(key.begin(), key.end(), '_', '-');
    given.insert(key);
  }
  if (!rawDense)
    given.erase("raw-dense");
  applyCtrDefaults(s, given);
  unwrap(fitRecipeToData(s, given));
  return s;
}

void bindOptimizers(py::module_ &m) {
  bindOptimizerClasses(m);
  m.def(
      "build_recipe", [](const py::kwargs &kw) { return unwrap(buildRecipe(recipeSpec(kw))); },
      "oar-model's built-in models (api/recipes.h), settings named as its flags");
}

} // namespace oar::python
