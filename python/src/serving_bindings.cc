// Models out from Python: export a trained model (as oar-export does) and serve it with
// oar::Predictor, whose predict() releases the GIL and is safe from many threads at once.
#include <pybind11/stl.h>

#include "checkpoint/checkpoint_reader.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/tensor_bridge.h"
#include "serving/export.h"
#include "serving/predictor.h"

namespace py = pybind11;

namespace oar::python {

namespace {

/// The batch predict() takes, in the predictor's input order, from {input: array}; every input
/// named, nothing else, each of its declared type (GIL held).
std::vector<Tensor> predictorBatch(const Predictor &p, const py::dict &feed) {
  std::vector<Tensor> batch;
  for (size_t i = 0; i < p.inputs().size(); ++i) {
    const std::string &name = p.inputs()[i];
    std::string what = "predict input \"" + name + "\"";
    if (!feed.contains(name))
      throw OarError(what + ": missing (the model reads " + std::to_string(p.inputs().size()) +
                     " inputs: " + llvm::join(p.inputs(), ", ") + ")");
    py::handle value = feed[py::str(name)];
    if (!py::isinstance<py::array>(value))
      throw OarError(what + ": not a NumPy array");
    Tensor t = viewOf(value.cast<py::array>(), what);
    checkAgainstDeclared(t, p.inputType(i), p.inputDims(i), name, what);
    batch.push_back(std::move(t));
  }
  for (auto [key, value] : feed)
    if (!llvm::is_contained(p.inputs(), std::string(py::str(key))))
      throw OarError("predict: the model has no input \"" + std::string(py::str(key)) + "\"");
  return batch;
}

py::dict predict(const Predictor &p, const py::dict &feed) {
  std::vector<Tensor> batch = predictorBatch(p, feed);
  llvm::Expected<std::vector<Tensor>> scores = std::vector<Tensor>();
  {
    py::gil_scoped_release noGil;
    scores = p.predict(batch);
    batch.clear(); // the views drop their arrays under the GIL, one at a time
  }
  std::vector<Tensor> out = unwrap(std::move(scores));
  py::dict result;
  for (size_t i = 0; i < out.size(); ++i)
    result[py::str(p.outputs()[i])] = arrayOver(std::move(out[i]));
  return result;
}

} // namespace

void bindServing(py::module_ &m) {
  py::class_<Predictor>(m, "Predictor", "an exported model, served from any number of threads")
      .def(py::init([](const std::string &dir, int threadsPerCall) {
             PredictorOptions options;
             options.threadsPerCall = threadsPerCall;
             py::gil_scoped_release noGil;
             return unwrap(Predictor::load(dir, options));
           }),
           py::arg("export_dir"), py::arg("threads_per_call") = 1)
      .def_property_readonly("inputs", &Predictor::inputs)
      .def_property_readonly("outputs", &Predictor::outputs)
      .def("predict", &predict, py::arg("feed"));
  m.def("export_model",
        [](const proto::Program &main, const proto::Program &startup, const std::string &from,
           const std::string &dir, const std::vector<std::string> &outputs) {
          py::gil_scoped_release noGil;
          CheckpointReader ckpt = unwrap(CheckpointReader::open(from));
          ExportOptions options;
          options.outputs = outputs;
          throwIfError(writeExport(unwrap(exportModel(main, startup, ckpt, options)), dir));
        },
        py::arg("main"), py::arg("startup"), py::arg("checkpoint"), py::arg("export_dir"),
        py::arg("outputs") = std::vector<std::string>(),
        "writes an export of the model with the values a save or a checkpoint holds, as "
        "oar-export does");
}

} // namespace oar::python
