// The CURVE keys oar-launch makes for a local job.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "llvm/Support/Error.h"

namespace oar::runtime {

/// A private directory (mode 0700) holding one key pair for the pservers, one per trainer and
/// the pservers' allow-list of the trainers' public keys; removed with this object. No other
/// process can then join the job or read its traffic, even on this host.
class LaunchKeys {
public:
  static llvm::Expected<std::unique_ptr<LaunchKeys>> create(int trainers);
  ~LaunchKeys();
  std::vector<std::string> pserverArgs() const;
  std::vector<std::string> trainerArgs(int trainerId) const;

private:
  explicit LaunchKeys(std::string dir) : dir_(std::move(dir)) {}
  /// Starts a process, in a session of its own, that removes the directory once this process
  /// is gone however it ends: killed with SIGKILL, the destructor never runs.
  llvm::Error startJanitor();
  std::string dir_;
  int janitorPipe_ = -1; ///< the write end: its close (at our exit) wakes the janitor
  pid_t janitor_ = -1;
};

} // namespace oar::runtime
