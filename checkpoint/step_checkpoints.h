// Periodic checkpoints of one node: DIR/step-<N>/ directories, each written under a temporary
// name with every file synced, a MANIFEST last, then renamed into place. A directory whose
// MANIFEST is missing or does not match its files (a node killed while writing, a full disk) is
// never read, and the next write removes it.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace oar {

/// What a complete checkpoint's MANIFEST says.
struct CheckpointManifest {
  std::string digest;                        ///< the job it belongs to
  std::map<std::string, std::string> fields; ///< `field KEY VALUE` lines (epoch, ...)
};

/// Reads `path`/MANIFEST; none unless it lists exactly the files under `path` at their sizes.
/// (Cheap: no file is read. A checkpoint about to be loaded is checked whole by
/// verifyCheckpointFiles.)
std::optional<CheckpointManifest> readCompleteCheckpoint(const std::string &path);

/// Checks every file of the checkpoint at `path` against the CRC-32 its MANIFEST records: an
/// error naming the file when one differs (a flipped byte on disk), so a damaged checkpoint is
/// never loaded. Checkpoints written before the checksums pass unchecked.
llvm::Error verifyCheckpointFiles(const std::string &path);

/// The steps of the entries named step-<N> in `dir`, newest first (complete or not).
std::vector<int64_t> checkpointSteps(const std::string &dir);

/// The checkpoints of one node of one job in `dir`.
class StepCheckpoints {
public:
  /// `digest` ties checkpoints to the job: another job's are never read. `keep` (at least 1)
  /// complete ones stay, newest first.
  StepCheckpoints(std::string dir, std::string digest, int keep)
      : dir_(std::move(dir)), digest_(std::move(digest)), keep_(keep) {}

  /// Writes step `step`: `fill` writes its files into the directory it is given (each synced),
  /// then the MANIFEST (with `fields`) goes in and the directory is renamed into place. Older
  /// checkpoints past `keep`, torn ones and leftover temporaries are removed.
  llvm::Error write(int64_t step, llvm::function_ref<llvm::Error(const std::string &)> fill,
                    const std::map<std::string, std::string> &fields = {}) const;
  /// The newest complete checkpoint of this job, if any.
  std::optional<int64_t> latest() const;
  /// The MANIFEST of step `step` if it is complete and this job's.
  std::optional<CheckpointManifest> manifest(int64_t step) const;
  std::string pathOf(int64_t step) const;
  /// Removes the checkpoints of steps after `step`: the job went back to `step`, so they hold a
  /// future that will not happen, and a restart must never resume from one.
  void dropAfter(int64_t step);
  const std::string &dir() const { return dir_; }

private:
  std::string dir_, digest_;
  int keep_;
};

} // namespace oar
