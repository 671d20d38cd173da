// oar-launch's keys.
#include "runtime/security/launch_keys.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/security/curve.h"
#include "support/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

llvm::Expected<std::unique_ptr<LaunchKeys>> LaunchKeys::create(int trainers) {
  llvm::SmallString<128> tmp;
  llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, tmp);
  llvm::sys::path::append(tmp, "oar-launch-keys-XXXXXX");
  std::string pattern = tmp.str().str();
  if (!mkdtemp(pattern.data())) // mode 0700
    return makeError("cannot make a directory for the job's keys ({0}): {1}", pattern,
                     strerror(errno));
  std::unique_ptr<LaunchKeys> keys(new LaunchKeys(pattern));
  if (llvm::Error err = keys->startJanitor())
    return err;
  auto write = [&](const std::string &stem) -> llvm::Expected<std::string> {
    auto pair = newCurveKeyPair();
    if (!pair)
      return pair.takeError();
    if (llvm::Error err = writeCurveKeyPair(*pair, keys->dir_ + "/" + stem))
      return err;
    return pair->publicKey;
  };
  if (auto server = write("pserver"); !server)
    return server.takeError();
  std::string allowList = "# the trainers of this launch\n";
  for (int i = 0; i < trainers; ++i) {
    auto pub = write("trainer." + std::to_string(i));
    if (!pub)
      return pub.takeError();
    allowList += *pub + "\n";
  }
  std::ofstream allow(keys->dir_ + "/trainers.allow");
  allow << allowList;
  if (!allow.flush())
    return makeError("{0}/trainers.allow: cannot write", keys->dir_);
  return keys;
}

llvm::Error LaunchKeys::startJanitor() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0)
    return makeError("cannot make a pipe for the keys' janitor: {0}", strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[0], STDIN_FILENO); // dup2 clears CLOEXEC
  // Not our output: a reader of it (a test, a pipeline) must not wait for the janitor.
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID); // a kill of our process group spares it
  const char *argv[] = {
      "sh", "-c", "cat >/dev/null; rm -rf -- \"$1\"", "oar-launch-janitor", dir_.c_str(), nullptr};
  int rc = posix_spawn(&janitor_, "/bin/sh", &actions, &attr, const_cast<char **>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(fds[0]);
  if (rc != 0) {
    ::close(fds[1]);
    janitor_ = -1;
    return makeError("cannot start the keys' janitor (/bin/sh): {0}", strerror(rc));
  }
  janitorPipe_ = fds[1];
  return llvm::Error::success();
}

LaunchKeys::~LaunchKeys() {
  llvm::sys::fs::remove_directories(dir_);
  if (janitorPipe_ >= 0)
    ::close(janitorPipe_);
  if (janitor_ > 0)
    waitpid(janitor_, nullptr, 0); // it ends at once: the pipe closed
}

std::vector<std::string> LaunchKeys::pserverArgs() const {
  return {"--curve-secret", dir_ + "/pserver.key", "--curve-allow", dir_ + "/trainers.allow"};
}

std::vector<std::string> LaunchKeys::trainerArgs(int trainerId) const {
  return {"--curve-secret", dir_ + "/trainer." + std::to_string(trainerId) + ".key",
          "--curve-server-key", dir_ + "/pserver.pub"};
}

} // namespace oar::runtime
