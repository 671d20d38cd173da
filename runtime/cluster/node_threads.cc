// How many compute threads a node of a job takes by default, from its role and where its peers are.
#include "runtime/cluster/node_threads.h"

#include <algorithm>

#include "executor/threads.h"
#include "support/endpoint.h"

namespace oar {

int defaultNodeThreads(Role role, int trainers, const std::vector<std::string> &pserverEndpoints) {
  int cores = usableCores();
  if (role == Role::Pserver)
    return 1;
  if (role == Role::Trainer && !pserverEndpoints.empty() &&
      std::all_of(pserverEndpoints.begin(), pserverEndpoints.end(),
                  [](const std::string &e) { return isLoopbackEndpoint(e); }))
    return std::max(1, cores / std::max(1, trainers));
  return cores;
}

} // namespace oar
