// Idle OpenMP threads sleep instead of spinning, so nodes that share cores do not starve each
// other (libgomp's default spins for up to ~300k iterations at every barrier).
//
// libgomp reads OMP_WAIT_POLICY once, in a constructor that runs when the library loads, before
// main. An executable's .preinit_array runs earlier still, but a setenv there is lost: libc's own
// initialiser runs next and points environ back at the process's original environment. So when
// the environment names no wait policy, the tool starts itself again (same pid, same arguments)
// with OMP_WAIT_POLICY=PASSIVE added; nothing has run yet, so nothing is lost. A user's own
// OMP_WAIT_POLICY or GOMP_SPINCOUNT is kept. Without /proc the tool runs on with libgomp's default.
#include <cstring>
#include <unistd.h>

static bool namesWaitPolicy(char **env) {
  for (char **e = env; *e; ++e)
    if (!std::strncmp(*e, "OMP_WAIT_POLICY=", 16) || !std::strncmp(*e, "GOMP_SPINCOUNT=", 15))
      return true;
  return false;
}

static void passiveOpenMpWaits(int, char **argv, char **env) {
  if (!env || namesWaitPolicy(env))
    return;
  size_t n = 0;
  while (env[n])
    ++n;
  char passive[] = "OMP_WAIT_POLICY=PASSIVE";
  char **withPolicy = static_cast<char **>(__builtin_alloca((n + 2) * sizeof(char *)));
  std::memcpy(withPolicy, env, n * sizeof(char *));
  withPolicy[n] = passive;
  withPolicy[n + 1] = nullptr;
  // The binary's own path, not /proc/self/exe: the kernel names the process after it (ps, top).
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0)
    return;
  self[len] = '\0';
  execve(self, argv, withPolicy); // returns only on failure: run on as we are
}

__attribute__((section(".preinit_array"),
               used)) static void (*const runEarly)(int, char **, char **) = passiveOpenMpWaits;
