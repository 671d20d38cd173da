// The parts of the _oar module, each bound in its own file; module.cc calls them in order.
#pragma once

#include <pybind11/pybind11.h>

namespace oar::python {

void bindPrograms(pybind11::module_ &m);   // program_bindings.cc: Program, load/save/text
void bindBuilder(pybind11::module_ &m);    // builder_bindings.cc: ModelBuilder, Initializer, feeds
void bindOptimizers(pybind11::module_ &m); // optimizer_bindings.cc: optimizers, schedules, recipes
void bindExecutor(pybind11::module_ &m);   // executor_bindings.cc: Scope, Executor, persistables
void bindFeeds(pybind11::module_ &m);      // feed_bindings.cc: the file formats as batches
void bindServing(pybind11::module_ &m);    // serving_bindings.cc: export, Predictor
void bindNodes(pybind11::module_ &m);      // node_bindings.cc: fleet's nodes: place, run, trainer steps

} // namespace oar::python
