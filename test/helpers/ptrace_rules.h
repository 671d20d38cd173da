// Whether this host lets one process read another's memory (process_vm_readv): Yama's
// ptrace_scope, seccomp filters and capabilities all decide, so each is tried for real, and
// peer-memory tests check what the host can do and say so when it cannot.
#pragma once

#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

namespace oar::test {

namespace detail {
inline const long readTarget = 0x6f6172; // at the same address in every forked child
/// In a child: 0 when it reads `readTarget` from process `pid`.
inline int readsFrom(pid_t pid) {
  long got = 0;
  iovec local{&got, sizeof(got)};
  iovec remote{const_cast<long *>(&readTarget), sizeof(got)};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == sizeof(got) && got == readTarget
             ? 0
             : 1;
}
/// A child that waits until the returned pipe end is closed.
inline pid_t waitingChild(int &release) {
  int fds[2];
  if (pipe(fds) != 0)
    return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[1]);
    char c;
    while (read(fds[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  close(fds[0]);
  release = fds[1];
  return pid;
}
inline bool reap(pid_t pid) {
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}
} // namespace detail

/// Whether this process may read a child's memory.
inline bool mayReadChildren() {
  int release = -1;
  pid_t child = detail::waitingChild(release);
  if (child < 0)
    return false;
  bool ok = detail::readsFrom(child) == 0;
  close(release);
  detail::reap(child);
  return ok;
}

/// Whether two processes that are not each other's ancestors (the nodes of a launch) may read
/// each other's memory.
inline bool siblingsMayReadEachOther() {
  int release = -1;
  pid_t target = detail::waitingChild(release);
  if (target < 0)
    return false;
  pid_t reader = fork();
  if (reader == 0)
    _exit(detail::readsFrom(target));
  bool ok = reader > 0 && detail::reap(reader);
  close(release);
  detail::reap(target);
  return ok;
}

} // namespace oar::test
