// Helpers for building llvm::Error values that users can act on.
#pragma once

#include "llvm/Support/Error.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar {

/// A string error formatted with llvm::formatv ("{0}: cannot read program: {1}").
template <typename... Ts> llvm::Error makeError(const char *fmt, Ts &&...vals) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::formatv(fmt, std::forward<Ts>(vals)...).str());
}

/// Prefixes an error's text with `context: `; success stays success.
inline llvm::Error addContext(llvm::Error err, const llvm::Twine &context) {
  if (!err)
    return llvm::Error::success();
  return makeError("{0}: {1}", context.str(), llvm::toString(std::move(err)));
}

} // namespace oar
