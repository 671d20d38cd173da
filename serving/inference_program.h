// The forward-only program a served model runs: the ops that compute its predictions from the
// fed vars, nothing of training (backward, optimizer, send/recv, metrics, the label).
#pragma once

#include <set>

#include "ir/program.h"
#include "llvm/Support/Error.h"

namespace oar {

/// The vars a model serves: those it names (ModelBuilder::addPrediction), else the input of its
/// auc or accuracy metric, else the prediction its square_error_cost compares with the label.
/// An error says how to name one.
llvm::Expected<std::vector<std::string>> servedOutputs(const proto::Program &main);

/// The tables a model keeps as key -> row maps when served: the W of every lookup_table with
/// is_distributed (trained on pservers, or dense on one machine), by name.
std::set<std::string> servedTables(const proto::Program &main);

/// The inference program of `main` for `outputs`: block 0 holds the forward ops that compute
/// them from fed vars, each lookup of a table in `tables` becoming lookup_sorted_table over the
/// table's keys and values (missing keys read the initial weights `startup` gives the table's
/// rows); `inputs` lists the fed vars read, `predictions` the outputs, and the feed (the test
/// feed, else the train feed, read once in order) says how rows come from files. Errors name an
/// output that needs something neither fed nor computed.
llvm::Expected<proto::Program> inferenceProgram(const proto::Program &main,
                                                const proto::Program &startup,
                                                const std::vector<std::string> &outputs,
                                                const std::set<std::string> &tables);

} // namespace oar
