// Where a node stands in its job: the environment's launch convention with the node's flags over
// it, and, for a trainer that meets the others, where they meet.
#pragma once

#include "runtime/node/node.h"

namespace oar::runtime {

/// The environment's convention (clusterFromEnv), each flag given over it, then an MPI or
/// Slurm rank placed by the pserver count (or, in a collective job, as a trainer). Errors name
/// the flag or variable.
llvm::Expected<ClusterSpec> placeNode(const NodeOptions &options, const GetEnv &getenv);

/// A collective or hybrid trainer's rendezvous (--rendezvous, else trainer 0's endpoint) and
/// the host its Gloo pairs listen on (its own endpoint's; else OAR_NODE_HOST; else the address
/// this host reaches trainer 0's from).
llvm::Error placeCollectiveTrainer(Node &node, const GetEnv &getenv);

} // namespace oar::runtime
