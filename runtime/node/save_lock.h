// A save or checkpoint directory held by one job while it runs, so two jobs never mix (or
// delete) each other's files in it.
#pragma once

#include <string>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// A shared hold on DIR/.oar-save.<job>.lock; released when destroyed or when the process ends
/// (an flock, so a killed node leaves no stale hold).
class SaveLock {
public:
  SaveLock() = default;
  SaveLock(SaveLock &&other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  SaveLock &operator=(SaveLock &&other) noexcept;
  SaveLock(const SaveLock &) = delete;
  SaveLock &operator=(const SaveLock &) = delete;
  ~SaveLock();

private:
  friend llvm::Expected<SaveLock> lockSaveDir(llvm::StringRef dir, llvm::StringRef job,
                                              llvm::StringRef flag);
  int fd_ = -1;
};

/// Creates `dir` and holds it for job `job` until the lock goes. The nodes of one job share the
/// hold; a directory that another running job holds is refused, naming that job. Lock files of
/// jobs that ended are removed. An empty `dir` (nothing to save) holds nothing. `flag` names the
/// option that gave `dir`, for the message.
llvm::Expected<SaveLock> lockSaveDir(llvm::StringRef dir, llvm::StringRef job,
                                     llvm::StringRef flag = "--save");

/// The job a save lock is taken for: the launch's job id, else the plan digest that the nodes of
/// one transpiled job share, else this process alone (a single-machine run).
std::string saveLockJob(llvm::StringRef jobId, llvm::StringRef planDigest);

} // namespace oar::runtime
