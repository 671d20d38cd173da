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
  }
  return "unknown";
}

llvm::Expected<Mode> parseMode(llvm::StringRef name) {
  for (Mode mode : {Mode::Sync, Mode::Async, Mode::Geo})
    if (name == modeName(mode))
      return mode;
  return makeError("mode \"{0}\" must be sync, async or geo", name);
}

} // namespace oar
