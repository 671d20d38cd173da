// One reader per launch convention's environment (cluster.cc picks the one in use).
#pragma once

#include "runtime/cluster/cluster.h"

namespace oar::runtime {

/// TF_CONFIG's JSON: cluster.ps are the pservers; cluster.chief (if any) is trainer 0 and
/// cluster.worker the trainers after it; task.type and task.index say which this node is.
llvm::Expected<ClusterSpec> clusterFromTfConfig(llvm::StringRef json);

/// Paddle's variables, 1.x (PADDLE_TRAINING_ROLE, PADDLE_PSERVER_IPS + PADDLE_PSERVER_PORT,
/// PADDLE_TRAINERS, PADDLE_CURRENT_IP) and 2.x fleet (TRAINING_ROLE, PADDLE_TRAINERS_NUM,
/// POD_IP + PADDLE_PORT); both take PADDLE_PSERVERS_IP_PORT_LIST, PADDLE_TRAINER_ID and
/// PADDLE_CURRENT_ENDPOINT. `firstSet` is the first of them set, named when the role is missing.
llvm::Expected<ClusterSpec> clusterFromPaddle(const GetEnv &getenv, llvm::StringRef firstSet);

/// MindSpore's MS_ROLE (MS_SCHED | MS_PSERVER | MS_WORKER), MS_SCHED_HOST, MS_SCHED_PORT,
/// MS_SERVER_NUM, MS_WORKER_NUM: every one is needed.
llvm::Expected<ClusterSpec> clusterFromMindSpore(const GetEnv &getenv);
/// ps-lite's DMLC_ROLE (scheduler | server | worker), DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT,
/// DMLC_NUM_SERVER, DMLC_NUM_WORKER: every one is needed.
llvm::Expected<ClusterSpec> clusterFromPsLite(const GetEnv &getenv);
/// MPI's rank and size (OMPI_COMM_WORLD_RANK/SIZE, or PMI_RANK/SIZE): placeMpiRank() gives the
/// role once the flags are read.
llvm::Expected<ClusterSpec> clusterFromMpi(const GetEnv &getenv);

} // namespace oar::runtime
