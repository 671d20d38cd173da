// Thread budget.
#include "executor/threads.h"

#include <algorithm>
#include <omp.h>
#include <sched.h>

#include "llvm/ADT/StringRef.h"

namespace oar {

int usableCores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1, omp_get_num_procs());
}

void setComputeThreads(int n) { omp_set_num_threads(std::max(1, n)); }

int computeThreads() { return omp_get_max_threads(); }

static bool isLoopback(llvm::StringRef endpoint) {
  llvm::StringRef host = endpoint.rsplit(':').first;
  return host.startswith("127.") || host == "localhost" || host == "[::1]";
}

int defaultNodeThreads(const std::string &role, int trainers,
                       const std::vector<std::string> &pserverEndpoints) {
  int cores = usableCores();
  if (role == "pserver")
    return 1;
  if (role == "trainer" && !pserverEndpoints.empty() &&
      std::all_of(pserverEndpoints.begin(), pserverEndpoints.end(),
                  [](const std::string &e) { return isLoopback(e); }))
    return std::max(1, cores / std::max(1, trainers));
  return cores;
}

} // namespace oar
