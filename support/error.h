// Helpers for building llvm::Error values that users can act on.
#pragma once

#include <string>

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

/// An error that is only its text, told apart from others by `Kind` (a tag type) so that a
/// caller can act on it with isA<KindedError<Kind>>().
template <typename Kind> class KindedError : public llvm::ErrorInfo<KindedError<Kind>> {
public:
  inline static char ID = 0;
  explicit KindedError(std::string message) : message_(std::move(message)) {}
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  std::string message_;
};

} // namespace oar
