// A Scope shared by Python threads: runs on one scope take turns (oar's Scope is not thread safe).
#pragma once

#include <mutex>

#include "executor/tensor.h"

namespace oar::python {

/// Lock order: a thread gives up the GIL before it takes `mutex`, never the other way round, so
/// a holder of `mutex` may take the GIL (to drop a fed array) without a deadlock.
struct PythonScope {
  Scope scope;
  std::mutex mutex;
};

} // namespace oar::python
