// Stop flag set by signal handlers.
#include "runtime/signals.h"

#include <atomic>
#include <csignal>

namespace oar::runtime {

static std::atomic<int> gStopSignal{0};
static std::atomic<bool> gEndBeforePolled{false}, gPolled{false};

static void onStop(int sig) {
  if (gEndBeforePolled.load() && !gPolled.load()) { // signal() and raise() are signal-safe
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  gStopSignal.store(sig);
}

void installStopHandlers(BeforeFirstPoll before) {
  gEndBeforePolled.store(before == BeforeFirstPoll::End);
  struct sigaction sa = {};
  sa.sa_handler = onStop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
}

bool stopRequested() {
  gPolled.store(true);
  return gStopSignal.load() != 0;
}
int stopSignal() { return gStopSignal.load(); }

static std::atomic<bool> gCheckpointRequested{false};

static void onCheckpoint(int) { gCheckpointRequested.store(true); }

void installCheckpointHandler() {
  struct sigaction sa = {};
  sa.sa_handler = onCheckpoint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGUSR1, &sa, nullptr);
}

bool takeCheckpointRequest() { return gCheckpointRequested.exchange(false); }

} // namespace oar::runtime
