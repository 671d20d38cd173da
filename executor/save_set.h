// A set of .npy files replaced together: a save that is killed at any point leaves the old set
// or the new one, never a mix (or, after a completed save, the new one once it is read again).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "executor/tensor.h"
#include "llvm/Support/Error.h"

namespace oar {

/// Files under `dir` written as one set. add() writes each as <file>.staged, synced; commit()
/// writes a journal of the renames (DIR/.oar-save.<pid>.journal, published by a rename), then
/// renames every staged file over its file and removes the journal. A process killed before the
/// journal is published leaves every old file in place; one killed after it leaves a journal
/// that finishInterruptedSaves() completes before the directory is read or saved again.
class SaveSet {
public:
  explicit SaveSet(std::string dir) : dir_(std::move(dir)) {}
  SaveSet(const SaveSet &) = delete;
  SaveSet &operator=(const SaveSet &) = delete;
  /// Removes the staged files of a set that was not committed.
  ~SaveSet();

  /// Stages `t` for `path`, which must lie under the set's directory (as float16 with `asF16`).
  llvm::Error add(llvm::StringRef path, const Tensor &t, bool asF16 = false);
  /// Stages a text file.
  llvm::Error addText(llvm::StringRef path, llvm::StringRef text);
  /// Files staged so far, and their bytes.
  size_t files() const { return files_.size(); }
  uint64_t bytes() const { return bytes_; }
  /// Puts every staged file in place. Errors name the file.
  llvm::Error commit();

private:
  std::string dir_;
  /// `path` relative to the set's directory, or an error.
  llvm::Expected<std::string> relativePath(llvm::StringRef path) const;
  std::vector<std::string> files_; ///< relative to dir_
  uint64_t bytes_ = 0;
  bool committed_ = false;
};

/// Writes `text` at `file` and flushes it to disk; a failed write leaves no file. Errors name
/// `shown`, the file it stands for: "<shown>: cannot write<what>: <why>".
llvm::Error writeTextSynced(llvm::StringRef file, llvm::StringRef shown, llvm::StringRef what,
                            llvm::StringRef text);
/// Flushes a directory's entries (names created, renamed or removed in it) to disk.
void syncDirectory(llvm::StringRef dir);

/// Completes the renames of any save into `dir` that was killed after it published its journal
/// (a no-op when there is none). Call it before reading or saving `dir`.
llvm::Error finishInterruptedSaves(llvm::StringRef dir);

} // namespace oar
