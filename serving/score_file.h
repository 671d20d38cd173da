// The scores of an evaluation, a line per test row as oar-predict writes them: what a training
// job's own predictions look like, to compare with a served model's.
#pragma once

#include <memory>

#include "executor/tensor.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

class ScoreFile {
public:
  /// Opens `path` for the values of `outputs` (the model's served vars).
  static llvm::Expected<std::unique_ptr<ScoreFile>> open(llvm::StringRef path,
                                                         std::vector<std::string> outputs);
  /// Writes a line per row of the outputs `scope` holds (after an evaluated batch).
  void write(const Scope &scope);
  /// Flushes; errors name the file.
  llvm::Error close();

private:
  ScoreFile(std::string path, std::vector<std::string> outputs,
            std::unique_ptr<llvm::raw_fd_ostream> os)
      : path_(std::move(path)), outputs_(std::move(outputs)), os_(std::move(os)) {}
  std::string path_;
  std::vector<std::string> outputs_;
  std::unique_ptr<llvm::raw_fd_ostream> os_;
  bool missing_ = false;
};

} // namespace oar
