// _oar: oar's C++ library as a Python extension module. The pure-Python package `oar` beside it
// (python/oar/) gives it the names a Paddle user knows; nothing is implemented twice.
#include "python/src/bindings.h"
#include "python/src/errors.h"

PYBIND11_MODULE(_oar, m) {
  m.doc() = "oar's C++ library; use it through the oar package";
  oar::python::bindErrors(m);
  oar::python::bindPrograms(m);
  oar::python::bindBuilder(m);
  oar::python::bindOptimizers(m);
  oar::python::bindExecutor(m);
  oar::python::bindFeeds(m);
  oar::python::bindServing(m);
  oar::python::bindNodes(m);
}
