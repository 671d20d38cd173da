// The compute threads of one process: oneDNN's GEMMs run on OpenMP, sized here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

/// Cores this process may run on (its CPU affinity mask), at least 1.
int usableCores();

/// The most threads a budget may name: more is a typo, not a machine.
constexpr int kMaxComputeThreads = 4096;

/// The thread budget OMP_NUM_THREADS sets by hand, given its value: the count of its first
/// nesting level ("4" and "4,2" give 4); none when unset or blank. Anything but a list of counts
/// from 1 to kMaxComputeThreads (which libgomp too would ignore, after a warning) is an error
/// that names the variable.
llvm::Expected<std::optional<int>> ompNumThreads(const char *value);

/// Flushes denormal floats to zero (x86's FTZ and DAZ) on the calling thread and on OpenMP's
/// threads, as TensorFlow does on its compute threads. A GEMM whose operands hold denormals (a
/// weight decayed towards zero) runs several times slower, and no model needs their precision.
/// Threads created later by these inherit the mode. OpenMP's threads keep it: they are the
/// process's compute threads.
void flushDenormals();
/// The same on the calling thread only: cheap enough for every run of a block.
void flushDenormalsOnThisThread();
/// Flushes denormals on the calling thread while it lives, then puts the thread's mode back: an
/// application that runs oar's executor on its own threads keeps its own floating-point mode.
class ScopedFlushDenormals {
public:
  ScopedFlushDenormals();
  ~ScopedFlushDenormals();
  ScopedFlushDenormals(const ScopedFlushDenormals &) = delete;
  ScopedFlushDenormals &operator=(const ScopedFlushDenormals &) = delete;

private:
  unsigned saved_ = 0;
};

/// Sets the OpenMP (and so oneDNN) thread budget for the rest of the process; n >= 1.
void setComputeThreads(int n);

/// Uses at most the cores that other processes leave free, within the budget. A GEMM's static
/// OpenMP split waits for its slowest thread, so a thread sharing a core with a busy process
/// costs every parallel region a scheduler time slice: one thread fewer is then much faster.
/// Reads the run queue (/proc/loadavg) at most every 50 ms; call it between steps.
void fitComputeThreadsToLoad();
/// The thread count compute regions use now.
int computeThreads();

/// The budget for a node's log, and how idle OpenMP threads wait when there can be any:
/// "1 compute thread (SOURCE)", "2 compute threads, idle ones sleeping (OMP_WAIT_POLICY=PASSIVE)
/// (SOURCE)". Two processes whose descriptions match up to " (SOURCE)" compute alike.
std::string describeComputeThreads(llvm::StringRef source);

} // namespace oar
