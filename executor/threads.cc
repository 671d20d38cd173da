// Thread budget.
#include "executor/threads.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <omp.h>
#include <sched.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "support/env_names.h"
#include "support/error.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

namespace oar {

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1, omp_get_num_procs());
}

llvm::Expected<std::optional<int>> ompNumThreads(const char *value) {
  llvm::StringRef text = llvm::StringRef(value ? value : "").trim();
  if (text.empty())
    return std::nullopt;
  llvm::SmallVector<llvm::StringRef, 4> levels;
  text.split(levels, ',');
  std::optional<int> first;
  for (llvm::StringRef level : levels) {
    int n = 0;
    if (level.trim().getAsInteger(10, n) || n < 1 || n > kMaxComputeThreads)
      return makeError("OMP_NUM_THREADS \"{0}\" is not a list of thread counts from 1 to {1}",
                       value, kMaxComputeThreads);
    first = first.value_or(n);
  }
  return first;
}

void flushDenormalsOnThisThread() {
#if defined(__SSE__)
  constexpr unsigned kFlushToZero = 0x8000, kDenormalsAreZero = 0x0040;
  unsigned csr = _mm_getcsr();
  if ((csr & (kFlushToZero | kDenormalsAreZero)) != (kFlushToZero | kDenormalsAreZero))
    _mm_setcsr(csr | kFlushToZero | kDenormalsAreZero);
#endif
}

ScopedFlushDenormals::ScopedFlushDenormals() {
#if defined(__SSE__)
  saved_ = _mm_getcsr();
#endif
  flushDenormalsOnThisThread();
}

ScopedFlushDenormals::~ScopedFlushDenormals() {
#if defined(__SSE__)
  _mm_setcsr(saved_);
#endif
}

void flushDenormals() {
  flushDenormalsOnThisThread();
#pragma omp parallel
  flushDenormalsOnThisThread();
}

static std::atomic<int> budget{0}; // 0: never set, leave OpenMP's own default

void setComputeThreads(int n) {
  budget = std::max(1, n);
  omp_set_num_threads(budget);
  flushDenormals();
}

/// Runnable tasks on the machine other than the caller (the 4th field of /proc/loadavg,
/// "running/total", counts the reader itself); -1 when it cannot be read.
static int otherRunnableTasks() {
  std::FILE *f = std::fopen("/proc/loadavg", "r");
  if (!f)
    return -1;
  double avg1, avg5, avg15;
  int running = 0, total = 0;
  int got = std::fscanf(f, "%lf %lf %lf %d/%d", &avg1, &avg5, &avg15, &running, &total);
  std::fclose(f);
  return got == 5 ? std::max(0, running - 1) : -1;
}

void fitComputeThreadsToLoad() {
  using Clock = std::chrono::steady_clock;
  static Clock::time_point nextCheck;
  int most = budget;
  if (most <= 1 || Clock::now() < nextCheck)
    return;
  nextCheck = Clock::now() + std::chrono::milliseconds(50);
  int others = otherRunnableTasks();
  if (others < 0)
    return;
  int n = std::clamp(usableCores() - others, 1, most);
  if (n != omp_get_max_threads()) {
    omp_set_num_threads(n);
    flushDenormals(); // threads the pool adds come from this one, but say so once more
  }
}

int computeThreads() { return omp_get_max_threads(); }

std::string describeComputeThreads(llvm::StringRef source) {
  int n = budget > 0 ? budget.load() : omp_get_max_threads();
  std::string text = std::to_string(n) + (n == 1 ? " compute thread" : " compute threads");
  // With one thread OpenMP starts no others, so no thread ever waits at its barriers.
  if (n > 1) {
    const char *policy = std::getenv(env::kOmpWaitPolicy);
    const char *spins = std::getenv(env::kGompSpinCount);
    std::string upper = llvm::StringRef(policy ? policy : "").trim().upper();
    if (spins)
      text += ", idle ones spinning up to GOMP_SPINCOUNT=" + std::string(spins);
    else if (upper == "PASSIVE")
      text += ", idle ones sleeping (OMP_WAIT_POLICY=PASSIVE)";
    else if (upper == "ACTIVE")
      text += ", idle ones spinning (OMP_WAIT_POLICY=ACTIVE)";
    else
      text += ", idle ones spinning a while, then sleeping (libgomp's default)";
  }
  return text + " (" + source.str() + ")";
}

} // namespace oar
