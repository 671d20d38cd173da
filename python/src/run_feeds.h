// What a run reads and returns from Python: feeds checked against the program's vars and viewed
// in place, fetches checked by name, and copies of the results for the caller to keep. The
// executor's runs and a trainer's driven steps share them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>

#include "executor/executor.h"
#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar::python {

/// Checks each feed against block 0 of `prog` and views its array (GIL held): oar.Error naming
/// the feed when the program has no such var, it is persistable, or the array does not fit.
std::vector<std::pair<std::string, Tensor>> viewFeeds(const proto::Program &prog,
                                                      const pybind11::dict &feed);
/// oar.Error naming the first fetch the program has no var for.
void checkFetches(const proto::Program &prog, const std::vector<std::string> &fetch);
/// A copy of the scope's `name` for the caller to keep (GIL released, scope locked).
llvm::Expected<Tensor> fetchCopy(const Scope &scope, const std::string &name);

} // namespace oar::python
