// Feeds and fetches of a run from Python.
#include "python/src/run_feeds.h"

#include "python/src/errors.h"
#include "python/src/program_vars.h"
#include "python/src/tensor_bridge.h"
#include "support/error.h"

namespace py = pybind11;

namespace oar::python {

/// Checks each feed against block 0 of `prog` and views its array (GIL held).
std::vector<std::pair<std::string, Tensor>> viewFeeds(const proto::Program &prog,
                                                      const py::dict &feed) {
  std::vector<std::pair<std::string, Tensor>> views;
  for (auto [key, value] : feed) {
    std::string name = py::str(key);
    std::string what = "feed \"" + name + "\"";
    const proto::Var *var = mainBlockVar(prog, name);
    if (!var)
      throw OarError(what + ": the program has no var of that name");
    if (var->persistable())
      throw OarError(what + ": " + name + " is persistable (a parameter or optimizer state), "
                     "which a feed would overwrite in the caller's array; set it with "
                     "Scope.set instead");
    if (!py::isinstance<py::array>(value))
      throw OarError(what + ": a " + std::string(py::str(value.get_type().attr("__name__"))) +
                     ", not a NumPy array");
    Tensor t = viewOf(value.cast<py::array>(), what);
    checkAgainstDeclared(t, var->type().dtype(), dimsOf(var->type()), name, what);
    views.emplace_back(std::move(name), std::move(t));
  }
  return views;
}

void checkFetches(const proto::Program &prog, const std::vector<std::string> &fetch) {
  for (const std::string &name : fetch)
    if (!mainBlockVar(prog, name))
      throw OarError("fetch_list: the program has no var \"" + name + "\"");
}

/// A copy of the scope's `name` for the caller to keep (GIL released, scope locked).
llvm::Expected<Tensor> fetchCopy(const Scope &scope, const std::string &name) {
  const Tensor *t = scope.find(name);
  if (!t || !t->initialized())
    return makeError("fetch_list: {0} holds no dense value after the run (a sparse gradient, or "
                     "not computed by the ops that ran)",
                     name);
  return ownCopy(*t);
}

} // namespace oar::python
