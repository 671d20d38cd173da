// oar's errors as Python exceptions: every llvm::Error that reaches Python becomes oar.Error (a
// RuntimeError) carrying oar's one-line message.
#pragma once

#include <stdexcept>
#include <string>

#include <pybind11/pybind11.h>

#include "llvm/Support/Error.h"

namespace oar::python {

/// Thrown on the C++ side; pybind11 turns it into oar.Error (module.cc registers it).
struct OarError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Raises oar.Error with `err`'s message; returns when `err` is success.
void throwIfError(llvm::Error err);

/// The value of `value`, or oar.Error with its message.
template <typename T> T unwrap(llvm::Expected<T> value) {
  if (!value)
    throwIfError(value.takeError());
  return std::move(*value);
}

/// Registers oar.Error in `module`.
void bindErrors(pybind11::module_ &module);

} // namespace oar::python
