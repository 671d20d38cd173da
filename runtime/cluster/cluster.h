// Which node this process is: from flags, or a launch convention's environment.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/node_role.h"
#include "llvm/Support/Error.h"

namespace oar::runtime {

/// This node's place in the job. Role::None means a single-machine run.
struct ClusterSpec {
  Role role = Role::None;
  int64_t trainerId = 0;
  int64_t trainers = 0; ///< 0: unknown
  std::vector<std::string> pservers;
  std::string currentEndpoint; ///< a pserver's own host:port (a collective trainer's, too)
  /// Collective jobs: every trainer's host:port, trainer 0's first; trainer 0 serves the
  /// rendezvous at its own (PADDLE_TRAINER_ENDPOINTS, TF_CONFIG's chief and workers).
  std::vector<std::string> trainerEndpoints;
  /// Which launch of a job this node belongs to (OAR_JOB_ID, set by oar-launch): a pserver
  /// refuses trainers of another launch, even of the same model. Empty: not checked.
  std::string jobId;
  /// host:port of the scheduler that hands out the endpoints (--scheduler, MS_SCHED_*,
  /// DMLC_PS_ROOT_*); empty: the endpoints are given.
  std::string scheduler;
  int64_t pserverCount = 0;   ///< with a scheduler: how many pservers register
  int64_t askedId = -1;       ///< with a scheduler: the id this node asks for (-1: any)
  std::string nodeHost;       ///< with a scheduler: the host a pserver serves at
  bool runsScheduler = false; ///< MPI rank 0 serves the scheduler beside its own role
  /// With a scheduler: the trainers meet each other (collective and hybrid jobs), so each
  /// registers the endpoint it is reached at, and learns the others'.
  bool trainersMeet = false;
  int64_t mpiRank = -1, mpiSize = 0; ///< under mpirun (or srun with PMI)
  /// Under srun: SLURM_PROCID and SLURM_NTASKS. A Slurm job sets them in every process, so they
  /// place this node only when asked to (--pserver-count without a role: useSlurmRank()).
  int64_t slurmRank = -1, slurmSize = 0;
};

using GetEnv = std::function<const char *(const char *)>;

/// Reads the launch convention in use: TF_CONFIG (chief = trainer 0, workers after it, ps),
/// or Paddle's variables (1.x PADDLE_TRAINING_ROLE ..., 2.x fleet TRAINING_ROLE ...; see
/// cluster_conventions.h); and OAR_JOB_ID. Nothing set: a single-machine run. Two conventions at
/// once, a Paddle variable without a role, or half of MindSpore's MS_* or ps-lite's DMLC_* are
/// errors naming the variables, so a node never trains alone by mistake. MPI's rank variables
/// (OMPI_COMM_WORLD_RANK, PMI_RANK) make an MPI rank (placeMpiRank).
llvm::Expected<ClusterSpec> clusterFromEnv(const GetEnv &getenv);

/// An MPI rank's role, once --scheduler and --pserver-count are known: the first pserverCount
/// ranks serve (rank 0 also runs the scheduler), the rest train.
llvm::Error placeMpiRank(ClusterSpec &spec);
/// An MPI (or Slurm) rank of a collective job: every rank trains, trainer i is rank i.
void placeCollectiveRank(ClusterSpec &spec);
/// Takes the Slurm task rank as the MPI rank (then placeMpiRank, or placeCollectiveRank) when the
/// node has no role of its own, no MPI rank, and asks for rank placement with a pserver count or
/// is a trainer of a `collective` job. Returns whether it did.
bool useSlurmRank(ClusterSpec &spec, bool collective = false);

/// The index of the pserver this spec is, among its pservers; errors name the endpoint.
llvm::Expected<size_t> pserverIndex(const ClusterSpec &spec);

} // namespace oar::runtime
