// Save-directory locks: flock(2) on one file per job, shared by the job's nodes. Another job
// holding its file is found by trying to take that file exclusively.
#include "runtime/node/save_lock.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

#include "support/error.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

static constexpr llvm::StringLiteral kPrefix = ".oar-save.", kSuffix = ".lock";

SaveLock &SaveLock::operator=(SaveLock &&other) noexcept {
  if (this != &other) {
    if (fd_ >= 0)
      ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

SaveLock::~SaveLock() {
  if (fd_ >= 0)
    ::close(fd_);
}

/// A job id as a file name: characters other than [A-Za-z0-9._-] become '_'.
static std::string fileSafe(llvm::StringRef job) {
  std::string out;
  for (char c : job)
    out += (llvm::isAlnum(c) || c == '.' || c == '_' || c == '-') ? c : '_';
  return out;
}

static bool sameFile(int fd, const std::string &path) {
  struct stat held, named;
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_ino == named.st_ino && held.st_dev == named.st_dev;
}

/// Opens `path` and takes `how` without blocking; -1 when another process holds it (errno
/// EWOULDBLOCK) or it cannot be opened.
static int openLocked(const std::string &path, int how) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return -1;
  if (::flock(fd, how | LOCK_NB) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

/// Fails naming the job when another running job holds a lock file in `dir`; removes the lock
/// files of jobs that ended.
static llvm::Error checkOtherJobs(llvm::StringRef dir, llvm::StringRef ownName,
                                  llvm::StringRef flag) {
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    if (name == ownName || !name.startswith(kPrefix) || !name.endswith(kSuffix))
      continue;
    // A running job holds its file shared for its whole life; a node checking whether that job
    // ended (as this one is) holds it exclusively for an instant. Only a hold that lasts is a
    // running job: the nodes of a job started after a killed one all check its file at once.
    int fd = -1, why = 0;
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (attempt > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      fd = openLocked(it->path(), LOCK_EX);
      why = errno; // before anything else can set it
      if (fd >= 0 || why != EWOULDBLOCK)
        break;
    }
    if (fd < 0) {
      if (why != EWOULDBLOCK)
        continue; // vanished meanwhile, or not ours to open: not a running job's hold
      llvm::StringRef other = name.drop_front(kPrefix.size()).drop_back(kSuffix.size());
      return makeError("{3} directory {0} is in use by another running job ({1}, {2}): give "
                       "another {3} directory or wait for that job to end",
                       dir, other, it->path(), flag);
    }
    ::unlink(it->path().c_str()); // that job ended: its file goes
    ::close(fd);
  }
  if (ec)
    return makeError("{2} directory {0}: cannot list it: {1}", dir, ec.message(), flag);
  return llvm::Error::success();
}

llvm::Expected<SaveLock> lockSaveDir(llvm::StringRef dir, llvm::StringRef job,
                                     llvm::StringRef flag) {
  if (dir.empty())
    return SaveLock();
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{2} directory {0}: cannot create it: {1}", dir, ec.message(), flag);
  std::string name = (kPrefix + fileSafe(job) + kSuffix).str();
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name);
  // Another job checking whether ours ended holds it exclusively for a moment, and may remove
  // it: retry briefly, and make sure the file held is still the one named.
  SaveLock lock;
  for (int attempt = 0; attempt < 100 && lock.fd_ < 0; ++attempt) {
    int fd = openLocked(std::string(path), LOCK_SH);
    if (fd >= 0 && sameFile(fd, std::string(path))) {
      lock.fd_ = fd;
      break;
    }
    if (fd >= 0)
      ::close(fd);
    else if (errno != EWOULDBLOCK)
      return makeError("{3} directory {0}: cannot open lock file {1}: {2}", dir, path,
                       std::strerror(errno), flag);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (lock.fd_ < 0)
    return makeError("{2} directory {0}: lock file {1} stayed held exclusively for 1 s", dir, path,
                     flag);
  if (llvm::Error err = checkOtherJobs(dir, name, flag))
    return err;
  return lock;
}

std::string saveLockJob(llvm::StringRef jobId, llvm::StringRef planDigest) {
  if (!jobId.empty())
    return jobId.str();
  if (!planDigest.empty())
    return "plan-" + planDigest.take_front(16).str();
  return "pid-" + std::to_string(::getpid());
}

} // namespace oar::runtime
