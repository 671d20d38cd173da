// Reads the layers cmake/layers.cmake declares and the includes of their files, and names every
// include that reaches a layer its own does not build on, every cycle among the declarations and
// every folder of sources that no layer holds.
#pragma once

#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace oar::test {

struct Layer {
  std::string name;
  std::vector<std::string> dirs; ///< folders relative to the source root; their files, not below
  std::vector<std::string> deps; ///< the layers it builds on, directly
};

/// Parses `path` (lines "name|dir dir|dep dep", "#" comments); an error names the file and line.
llvm::Expected<std::vector<Layer>> readLayers(const std::string &path);

/// Every problem found, one line each ("file:line: ..."); empty when the layering holds.
std::vector<std::string> layeringProblems(const std::vector<Layer> &layers,
                                          const std::string &sourceRoot);

} // namespace oar::test
