// SIGTERM, SIGINT and SIGUSR1, taken by one watcher thread.
//
// A handler runs on whichever thread the kernel picks, and interrupts that thread's blocking call
// (EINTR). ZeroMQ's C++ binding throws on EINTR from any send or receive, and a throw where no
// one catches it ends the process; a receive interrupted between the frames of one message would
// lose the message's start. So the signals are blocked in every thread (threads inherit the mask
// of the thread that starts them) and one thread takes them with sigwait: no working thread is
// ever interrupted. Loops notice a stop within their poll interval, as they did before.
#include "support/signals.h"

#include <atomic>
#include <csignal>
#include <mutex>
#include <pthread.h>
#include <system_error>
#include <thread>
#include <unistd.h>

#include "support/error.h"

namespace oar::runtime {

namespace {
std::atomic<int> gStopSignal{0};
std::atomic<bool> gStopWatched{false}, gEndBeforePolled{false}, gPolled{false};
std::atomic<bool> gCheckpointWatched{false}, gCheckpointRequested{false};

sigset_t watchedSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGUSR1);
  return set;
}

/// Ends the process as the signal's default action does, so its parent sees "killed by".
[[noreturn]] void endBy(int sig) {
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  raise(sig);
  _exit(128 + sig); // not reached: the default action of these three ends the process
}

void watch() {
  const sigset_t set = watchedSignals();
  for (;;) {
    int sig = 0;
    if (sigwait(&set, &sig) != 0)
      continue;
    if (sig == SIGUSR1) {
      if (!gCheckpointWatched.load())
        endBy(sig);
      gCheckpointRequested.store(true);
      continue;
    }
    if (!gStopWatched.load() || (gEndBeforePolled.load() && !gPolled.load()))
      endBy(sig);
    gStopSignal.store(sig);
  }
}

/// Blocks the signals in the calling thread and starts the watcher, once per process; an error
/// when the thread cannot start (a process or thread limit reached), the signals left as they were.
llvm::Error startWatcher() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    const sigset_t set = watchedSignals();
    sigset_t before;
    pthread_sigmask(SIG_BLOCK, &set, &before);
    try {
      std::thread(watch).detach(); // lives as long as the process
    } catch (const std::system_error &e) {
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      failure = e.what();
    }
  });
  if (!failure.empty())
    return makeError("cannot start the thread that takes SIGTERM and SIGINT: {0}", failure);
  return llvm::Error::success();
}
} // namespace

llvm::Error installStopHandlers(BeforeFirstPoll before) {
  gEndBeforePolled.store(before == BeforeFirstPoll::End);
  gStopWatched.store(true);
  return startWatcher();
}

bool stopRequested() {
  gPolled.store(true);
  return gStopSignal.load() != 0;
}
int stopSignal() { return gStopSignal.load(); }

llvm::Error installCheckpointHandler() {
  gCheckpointWatched.store(true);
  return startWatcher();
}

bool takeCheckpointRequest() { return gCheckpointRequested.exchange(false); }

void unblockWatchedSignals() {
  const sigset_t set = watchedSignals();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

} // namespace oar::runtime
