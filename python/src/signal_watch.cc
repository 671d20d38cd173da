#include "python/src/signal_watch.h"

namespace oar::python {

SignalWatch::~SignalWatch() {
  if (!type_)
    return;
  pybind11::gil_scoped_acquire gil;
  Py_XDECREF(type_), Py_XDECREF(value_), Py_XDECREF(traceback_);
}

bool SignalWatch::tripped() {
  if (tripped_)
    return true;
  auto now = std::chrono::steady_clock::now();
  // Often enough to stop within a second, rarely enough to cost nothing between ops.
  if (now - lastCheck_ < std::chrono::milliseconds(50))
    return false;
  lastCheck_ = now;
  PyGILState_STATE state = PyGILState_Ensure();
  if (PyErr_CheckSignals() != 0) {
    PyErr_Fetch(&type_, &value_, &traceback_);
    tripped_ = true;
  }
  PyGILState_Release(state);
  return tripped_;
}

void SignalWatch::raiseIfTripped() {
  if (!tripped_)
    return;
  if (!type_)
    throw pybind11::error_already_set(); // nothing to restore: Python reports the bare failure
  PyErr_Restore(type_, value_, traceback_);
  type_ = value_ = traceback_ = nullptr;
  throw pybind11::error_already_set();
}

} // namespace oar::python
