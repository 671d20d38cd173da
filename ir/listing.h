// Human-readable views of programs: the one-line-per-op listing and Graphviz drawings.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ir/program.h"

namespace oar {

/// `fc_0.tmp_0 = mul(X: x, Y: fc_0.w_0) {x_num_col_dims=1}`: outputs on the left, inputs by
/// slot, the attrs set on the op sorted by name.
std::string opLine(const proto::Op &op);
/// Every block: a `block i (parent p)` line, then (with `withVars`) its vars, then its ops.
std::string listing(const proto::Program &prog, bool withVars = false);
/// An attr value as the listing prints it.
std::string attrText(const proto::Attr &attr);

/// Named programs: a file gives itself; a directory gives its trainer and pserver programs.
llvm::Expected<std::vector<std::pair<std::string, proto::Program>>>
loadProgramsForShow(const std::vector<std::string> &paths);
/// Graphviz: one cluster per program, data-flow edges inside, and an edge for every send and
/// recv between a trainer and the pserver whose endpoint it names.
std::string dotGraph(const std::vector<std::pair<std::string, proto::Program>> &programs);

} // namespace oar
