// Ctrl-C while oar computes with the GIL released: a stop check the executor polls, which looks
// at Python's pending signals at most every 50 ms and remembers the exception a handler raised
// (KeyboardInterrupt), to be raised once the call is back in Python.
#pragma once

#include <chrono>

#include <pybind11/pybind11.h>

namespace oar::python {

class SignalWatch {
public:
  SignalWatch() = default;
  SignalWatch(const SignalWatch &) = delete;
  ~SignalWatch();
  /// Called without the GIL (from the thread that released it): true once a signal handler
  /// raised. Only the main thread runs handlers; elsewhere this stays false.
  bool tripped();
  /// With the GIL: raises what the handler raised, if it did.
  void raiseIfTripped();

private:
  std::chrono::steady_clock::time_point lastCheck_ = std::chrono::steady_clock::now();
  bool tripped_ = false;
  PyObject *type_ = nullptr, *value_ = nullptr, *traceback_ = nullptr;
};

} // namespace oar::python
