// One reader per launch convention's environment (cluster.cc picks the one in use).
#pragma once

#include "runtime/cluster.h"

namespace oar::runtime {

/// TF_CONFIG's JSON: cluster.ps are the pservers; cluster.chief (if any) is trainer 0 and
/// cluster.worker the trainers after it; task.type and task.index say which this node is.
llvm::Expected<ClusterSpec> clusterFromTfConfig(llvm::StringRef json);

/// Paddle's variables, 1.x (PADDLE_TRAINING_ROLE, PADDLE_PSERVER_IPS + PADDLE_PSERVER_PORT,
/// PADDLE_TRAINERS, PADDLE_CURRENT_IP) and 2.x fleet (TRAINING_ROLE, PADDLE_TRAINERS_NUM,
/// POD_IP + PADDLE_PORT); both take PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINER_ID and
/// PADDLE_CURRENT_ENDPOINT. `firstSet` is the first of them set, named when the role is missing.
llvm::Expected<ClusterSpec> clusterFromPaddle(const GetEnv &getenv, llvm::StringRef firstSet);

} // namespace oar::runtime
