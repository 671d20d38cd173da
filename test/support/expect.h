// Test helpers that consume llvm::Error / llvm::Expected and FAIL with their text.
#pragma once

#include <catch2/catch.hpp>
#include <string>

#include "llvm/Support/Error.h"

#define REQUIRE_OK(expr)                                                                           \
  do {                                                                                             \
    if (llvm::Error oarErr_ = (expr))                                                              \
      FAIL(llvm::toString(std::move(oarErr_)));                                                    \
  } while (0)

template <typename T> T requireValue(llvm::Expected<T> v) {
  if (!v)
    FAIL(llvm::toString(v.takeError()));
  return std::move(*v);
}

/// The text of an error that must have happened ("" and a failed check if it did not).
std::string errorText(llvm::Error err);
template <typename T> std::string errorText(llvm::Expected<T> v) {
  if (v)
    return errorText(llvm::Error::success());
  return errorText(v.takeError());
}

/// Runs a shell command; returns its exit status and puts stdout+stderr in `output`.
int runCommand(const std::string &cmd, std::string &output);
/// A fresh directory under the build tree for one test.
std::string scratchDir(const std::string &name);
std::string binDir();
std::string sharedDir();
std::string sourceDir();
