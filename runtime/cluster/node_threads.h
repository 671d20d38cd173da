// How many compute threads a node of a job takes by default, from its role and where its peers are.
#pragma once

#include <string>
#include <vector>

#include "ir/node_role.h"

namespace oar {

/// A default thread budget for a node when several may share a host: a pserver's work is
/// element-wise (1 thread); trainers of a job whose pservers are all on loopback are taken to
/// share this host and split its cores; anything else uses every core.
int defaultNodeThreads(Role role, int trainers, const std::vector<std::string> &pserverEndpoints);

} // namespace oar
