// Every environment variable oar reads or sets, named once: a reader greps one place to learn
// what the environment can change.
#pragma once

namespace oar::env {

// Paddle's parameter-server variables (runtime/cluster/cluster_paddle.cc), as Fleet sets them.
inline constexpr const char *kPaddleTrainingRole = "PADDLE_TRAINING_ROLE"; ///< TRAINER or PSERVER
inline constexpr const char *kTrainingRole = "TRAINING_ROLE"; ///< Fluid's older name of the role
inline constexpr const char *kPaddlePserversIpPortList = "PADDLE_PSERVERS_IP_PORT_LIST";
inline constexpr const char *kPaddlePserverIps = "PADDLE_PSERVER_IPS";
inline constexpr const char *kPaddlePserverPort = "PADDLE_PSERVER_PORT";
inline constexpr const char *kPaddleTrainers = "PADDLE_TRAINERS";
inline constexpr const char *kPaddleTrainersNum = "PADDLE_TRAINERS_NUM";
inline constexpr const char *kPaddleTrainerId = "PADDLE_TRAINER_ID";
inline constexpr const char *kPaddleCurrentIp = "PADDLE_CURRENT_IP";
inline constexpr const char *kPaddleCurrentEndpoint = "PADDLE_CURRENT_ENDPOINT";
inline constexpr const char *kPaddlePort = "PADDLE_PORT";
/// Paddle's collective jobs: every trainer's host:port, trainer 0 first (its rendezvous).
inline constexpr const char *kPaddleTrainerEndpoints = "PADDLE_TRAINER_ENDPOINTS";
inline constexpr const char *kPodIp = "POD_IP"; ///< a Kubernetes pod's address
// TensorFlow's cluster description.
inline constexpr const char *kTfConfig = "TF_CONFIG";
// MindSpore's and ps-lite's scheduler variables (runtime/cluster/cluster_sched.cc).
inline constexpr const char *kMsRole = "MS_ROLE"; ///< MS_SCHED, MS_PSERVER or MS_WORKER
inline constexpr const char *kMsSchedHost = "MS_SCHED_HOST";
inline constexpr const char *kMsSchedPort = "MS_SCHED_PORT";
inline constexpr const char *kMsServerNum = "MS_SERVER_NUM";
inline constexpr const char *kMsWorkerNum = "MS_WORKER_NUM";
inline constexpr const char *kDmlcRole = "DMLC_ROLE"; ///< scheduler, server or worker
inline constexpr const char *kDmlcPsRootUri = "DMLC_PS_ROOT_URI";
inline constexpr const char *kDmlcPsRootPort = "DMLC_PS_ROOT_PORT";
inline constexpr const char *kDmlcNumServer = "DMLC_NUM_SERVER";
inline constexpr const char *kDmlcNumWorker = "DMLC_NUM_WORKER";
// Process managers: Slurm, Open MPI, PMI (MPICH, Intel MPI).
inline constexpr const char *kSlurmProcId = "SLURM_PROCID";
inline constexpr const char *kSlurmNtasks = "SLURM_NTASKS";
inline constexpr const char *kOmpiRank = "OMPI_COMM_WORLD_RANK";
inline constexpr const char *kOmpiSize = "OMPI_COMM_WORLD_SIZE";
inline constexpr const char *kPmiRank = "PMI_RANK";
inline constexpr const char *kPmiSize = "PMI_SIZE";
inline constexpr const char *kDmlcNodeHost = "DMLC_NODE_HOST"; ///< ps-lite's name for a node's host
// oar's own.
inline constexpr const char *kOarJobId = "OAR_JOB_ID";         ///< names a job's nodes alike
inline constexpr const char *kOarNodeHost = "OAR_NODE_HOST";   ///< the host a node announces
inline constexpr const char *kOarDirectLinks = "OAR_DIRECT_LINKS"; ///< 0: no direct ZMTP links
inline constexpr const char *kOarPeerMemory = "OAR_PEER_MEMORY";   ///< same-host memory: off or on
inline constexpr const char *kOarLocalTcp = "OAR_LOCAL_TCP";       ///< 1: TCP, not IPC, on loopback
inline constexpr const char *kOarListenFd = "OAR_LISTEN_FD"; ///< a listening socket handed over
/// A node's flags, one a line, for a script oar-launch runs as the node (oar.fleet reads them).
inline constexpr const char *kOarNodeFlags = "OAR_NODE_FLAGS";
inline constexpr const char *kOarCheckpointWrites = "OAR_CHECKPOINT_WRITES"; ///< background writes
// The OpenMP runtime and glibc's allocator, read (and for a node's children, set) by oar.
inline constexpr const char *kOmpNumThreads = "OMP_NUM_THREADS";
inline constexpr const char *kOmpWaitPolicy = "OMP_WAIT_POLICY";
inline constexpr const char *kGompSpinCount = "GOMP_SPINCOUNT";
inline constexpr const char *kMallocMmapThreshold = "MALLOC_MMAP_THRESHOLD_";
inline constexpr const char *kMallocTrimThreshold = "MALLOC_TRIM_THRESHOLD_";

} // namespace oar::env
