// How a distributed job's trainers and pservers agree on params: Paddle's sync, async and GEO.
// Programs, messages and flags carry the mode by name; the code between them uses the enum.
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

enum class Mode {
  Sync,  ///< every trainer's gradients summed at each step's barrier, then one update
  Async, ///< each gradient applied on arrival
  Geo,   ///< trainers train locally and send what changed every k steps
  /// No pservers: the trainers average their gradients by all-reduce, each runs the optimizer
  /// (Paddle's collective mode; runtime/collective/).
  Collective,
};

/// "sync", "async", "geo" or "collective": the name flags, program attrs, messages and logs use.
llvm::StringRef modeName(Mode mode);
/// The mode `name` names; an error naming it and the modes otherwise.
llvm::Expected<Mode> parseMode(llvm::StringRef name);

} // namespace oar
