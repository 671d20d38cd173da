// What the host's ptrace rules let one process read of another's memory (process_vm_readv), so
// that peer-memory tests check what this host can do, and say so when it cannot.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace oar::test {

/// Yama's kernel.yama.ptrace_scope: 0 when Yama is absent.
inline int yamaPtraceScope() {
  std::ifstream in("/proc/sys/kernel/yama/ptrace_scope");
  int scope = 0;
  in >> scope;
  return scope;
}

/// Whether this process has CAP_SYS_PTRACE, which lifts Yama's scopes 1 and 2.
inline bool hasPtraceCapability() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("CapEff:", 0) == 0) {
      unsigned long long caps = 0;
      std::istringstream(line.substr(7)) >> std::hex >> caps;
      return caps & (1ull << 19);
    }
  return false;
}

/// Whether a process may read its child's memory here.
inline bool mayReadChildren() {
  int scope = yamaPtraceScope();
  return scope <= 1 || (scope == 2 && hasPtraceCapability());
}

/// Whether processes of one user that are not each other's ancestors (the nodes of a launch)
/// may read each other's memory here.
inline bool siblingsMayReadEachOther() {
  int scope = yamaPtraceScope();
  return scope == 0 || (scope < 3 && hasPtraceCapability());
}

} // namespace oar::test
