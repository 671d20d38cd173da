// The compute threads of one process: oneDNN's GEMMs run on OpenMP, sized here.
#pragma once

#include <string>
#include <vector>

namespace oar {

/// Cores this process may run on (its CPU affinity mask), at least 1.
int usableCores();

/// Sets the OpenMP (and so oneDNN) thread count for the rest of the process; n >= 1.
void setComputeThreads(int n);
/// The thread count compute regions use now.
int computeThreads();

/// A default thread budget for a node when several may share a host: a pserver's work is
/// element-wise (1 thread); trainers of a job whose pservers are all on loopback are taken to
/// share this host and split its cores; anything else uses every core.
int defaultNodeThreads(const std::string &role, int trainers,
                       const std::vector<std::string> &pserverEndpoints);

} // namespace oar
