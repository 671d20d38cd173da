// Scope and Executor from Python: exe.run(program, scope, feed, fetch) over NumPy arrays. Feeds
// are read in place; the GIL is released while oar runs; Ctrl-C stops a run between two ops and
// raises KeyboardInterrupt, leaving the scope usable.
#include <mutex>

#include <pybind11/stl.h>

#include "checkpoint/checkpoint_reader.h"
#include "checkpoint/load_model.h"
#include "checkpoint/save_model.h"
#include "executor/executor.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/program_vars.h"
#include "python/src/python_scope.h"
#include "python/src/run_feeds.h"
#include "python/src/signal_watch.h"
#include "python/src/tensor_bridge.h"
#include "support/error.h"
#include "train/training_loop.h"

namespace py = pybind11;

namespace oar::python {

namespace {

class PyExecutor {
public:
  explicit PyExecutor(const std::string &place) : exec_(parse(place)) {}

  py::list run(const proto::Program &prog, PythonScope &scope, const py::dict &feed,
               const std::vector<std::string> &fetch, int block) {
    auto views = viewFeeds(prog, feed);
    checkFetches(prog, fetch);
    SignalWatch signals;
    std::vector<Tensor> fetched;
    llvm::Error err = llvm::Error::success();
    {
      py::gil_scoped_release noGil;
      std::lock_guard<std::mutex> lock(scope.mutex);
      for (auto &[name, t] : views)
        scope.scope.get(name) = std::move(t);
      views.clear();
      // Ctrl-C: the ops after a signal are skipped, and the call raises what its handler did.
      err = exec_.run(prog, scope.scope, block, [&](const proto::Op &) { return !signals.tripped(); });
      for (size_t i = 0; !err && i < fetch.size(); ++i) {
        auto t = fetchCopy(scope.scope, fetch[i]);
        if (!t)
          err = t.takeError();
        else
          fetched.push_back(std::move(*t));
      }
    }
    if (signals.tripped()) {
      llvm::consumeError(std::move(err));
      signals.raiseIfTripped();
    }
    throwIfError(std::move(err));
    py::list out;
    for (Tensor &t : fetched)
      out.append(arrayOver(std::move(t)));
    return out;
  }

private:
  static Executor parse(const std::string &text) {
    Place place = unwrap(parsePlace(text, "place"));
    if (place.device != Device::Cpu)
      throwIfError(usePlace(place));
    return Executor(place.device);
  }
  Executor exec_;
};

void bindScope(py::module_ &m) {
  py::class_<PythonScope>(m, "Scope", "named tensors a program runs over")
      .def(py::init<>())
      .def("get",
           [](PythonScope &s, const std::string &name) -> py::object {
             std::optional<Tensor> copy;
             {
               py::gil_scoped_release noGil;
               std::lock_guard<std::mutex> lock(s.mutex);
               if (const Tensor *t = s.scope.find(name); t && t->initialized())
                 copy = ownCopy(*t);
             }
             if (!copy)
               return py::none();
             return arrayOver(std::move(*copy));
           })
      .def("set",
           [](PythonScope &s, const std::string &name, const py::array &value) {
             Tensor copy = viewOf(value, "Scope.set \"" + name + "\"").clone();
             py::gil_scoped_release noGil;
             std::lock_guard<std::mutex> lock(s.mutex);
             s.scope.get(name) = std::move(copy);
           })
      .def("address",
           [](PythonScope &s, const std::string &name) -> uintptr_t {
             py::gil_scoped_release noGil;
             std::lock_guard<std::mutex> lock(s.mutex);
             const Tensor *t = s.scope.find(name);
             return t ? reinterpret_cast<uintptr_t>(t->raw()) : 0;
           },
           "where the var's tensor's bytes are (0: no such var): a fed array's own address");
}

void bindPersistables(py::module_ &m) {
  m.def("save_persistables",
        [](const proto::Program &main, PythonScope &s, const std::string &dir) {
          py::gil_scoped_release noGil;
          std::lock_guard<std::mutex> lock(s.mutex);
          throwIfError(saveSingleMachine(main, s.scope, dir));
        },
        "every persistable var as dir/<var>.npy, as oar-executor --save writes them");
  m.def("load_persistables",
        [](const proto::Program &main, const proto::Program &startup, PythonScope &s,
           const std::string &dir) {
          CheckpointReader ckpt = unwrap(CheckpointReader::open(dir));
          py::gil_scoped_release noGil;
          std::lock_guard<std::mutex> lock(s.mutex);
          auto report = loadSingleMachine(main, startup, s.scope, ckpt);
          if (!report)
            throwIfError(report.takeError());
          return report->summary(ckpt, /*training=*/false);
        },
        "sets the vars a save, a checkpoint or an export holds; returns what it loaded");
}

} // namespace

void bindExecutor(py::module_ &m) {
  bindScope(m);
  py::class_<PyExecutor>(m, "Executor")
      .def(py::init<const std::string &>(), py::arg("place") = "cpu")
      .def("run", &PyExecutor::run, py::arg("program"), py::arg("scope"),
           py::arg("feed") = py::dict(), py::arg("fetch_list") = std::vector<std::string>(),
           py::arg("block") = 0);
  bindPersistables(m);
}

} // namespace oar::python
