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

/// A whole file's bytes ("" when it cannot be read), and writing them.
std::string readFile(const std::string &path);
void writeFile(const std::string &path, const std::string &bytes);

/// Runs a shell command; returns its exit status and puts stdout+stderr in `output`.
int runCommand(const std::string &cmd, std::string &output);
/// A fresh directory under the build tree for one test.
std::string scratchDir(const std::string &name);
/// Where the tools under test are: the build tree, or $OAR_TEST_BIN_DIR when set (to run the
/// tool tests against other binaries, e.g. an older build, and see which claims fail there).
std::string binDir();
/// The repository root; test data lives in its data/ and test/fixtures/.
std::string sourceDir();
