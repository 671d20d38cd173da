// How a distributed job's trainers and pservers agree on params (see the header).
#include "ir/distributed_mode.h"

#include "support/error.h"

namespace oar {

llvm::StringRef modeName(Mode mode) {
  switch (mode) {
  case Mode::Sync:
    return "sync";
  case Mode::Async:
    return "async";
  case Mode::Geo:
    return "geo";
  case Mode::Collective:
    return "collective";
  }
  return "unknown";
}

llvm::Expected<Mode> parseMode(llvm::StringRef name) {
  for (Mode mode : {Mode::Sync, Mode::Async, Mode::Geo, Mode::Collective})
    if (name == modeName(mode))
      return mode;
  return makeError("mode \"{0}\" must be sync, async, geo or collective", name);
}

} // namespace oar
