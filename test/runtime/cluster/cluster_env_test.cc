// Launch conventions' environments: each read whole, none mixed, none half set.
#include <map>

#include "runtime/cluster/cluster.h"
#include "runtime/collective/local_address.h"
#include "test/helpers/expect.h"

using namespace oar::runtime;
using oar::Role;
using Catch::Matchers::Contains;

namespace {
using Env = std::map<std::string, std::string>;
llvm::Expected<ClusterSpec> specOf(const Env &env) {
  return clusterFromEnv([&](const char *n) -> const char * {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}
} // namespace

TEST_CASE("Paddle 2.x fleet variables make a pserver or a trainer", "[runtime][cluster]") {
  ClusterSpec ps =
      requireValue(specOf({{"TRAINING_ROLE", "PSERVER"},
                           {"PADDLE_PSERVERS_IP_PORT_LIST", "10.0.0.1:6170,10.0.0.2:6171"},
                           {"PADDLE_TRAINERS_NUM", "4"},
                           {"POD_IP", "10.0.0.2"},
                           {"PADDLE_PORT", "6171"}}));
  CHECK(ps.role == Role::Pserver);
  CHECK(ps.trainers == 4);
  CHECK(requireValue(pserverIndex(ps)) == 1);
  ClusterSpec tr = requireValue(specOf({{"TRAINING_ROLE", "TRAINER"},
                                        {"PADDLE_PSERVERS_IP_PORT_LIST", "10.0.0.1:6170"},
                                        {"PADDLE_TRAINERS_NUM", "4"},
                                        {"PADDLE_TRAINER_ID", "3"}}));
  CHECK(tr.role == Role::Trainer);
  CHECK(tr.trainerId == 3);
  CHECK(tr.pservers == std::vector<std::string>{"10.0.0.1:6170"});
  // 1.x and 2.x names of one setting may both be set, if they agree.
  CHECK(requireValue(specOf({{"TRAINING_ROLE", "trainer"}, {"PADDLE_TRAINING_ROLE", "TRAINER"}}))
            .role == Role::Trainer);
  CHECK_THAT(errorText(specOf({{"TRAINING_ROLE", "PSERVER"}, {"PADDLE_TRAINING_ROLE", "TRAINER"}})),
             Contains("PADDLE_TRAINING_ROLE is \"TRAINER\" but TRAINING_ROLE is \"PSERVER\""));
  CHECK_THAT(
      errorText(specOf(
          {{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINERS", "2"}, {"PADDLE_TRAINERS_NUM", "3"}})),
      Contains("PADDLE_TRAINERS is \"2\" but PADDLE_TRAINERS_NUM is \"3\""));
  CHECK_THAT(errorText(specOf({{"TRAINING_ROLE", "TRAINER"}, {"PADDLE_TRAINERS_NUM", "two"}})),
             Contains("PADDLE_TRAINERS_NUM is \"two\"; expected an integer"));
}

TEST_CASE("TF_CONFIG's chief is trainer 0 and its workers follow", "[runtime][cluster]") {
  auto tf = [](const std::string &type, int index) {
    return Env{{"TF_CONFIG", R"({"cluster": {"chief": ["c:1"], "worker": ["w:1", "w:2"],
                                            "ps": ["p:1", "p:2"]},
                                "task": {"type": ")" +
                                 type + R"(", "index": )" + std::to_string(index) + "}}"}};
  };
  ClusterSpec chief = requireValue(specOf(tf("chief", 0)));
  CHECK(chief.role == Role::Trainer);
  CHECK(chief.trainerId == 0);
  CHECK(chief.trainers == 3);
  CHECK(requireValue(specOf(tf("worker", 0))).trainerId == 1);
  CHECK(requireValue(specOf(tf("worker", 1))).trainerId == 2);
  ClusterSpec ps = requireValue(specOf(tf("ps", 1)));
  CHECK(ps.role == Role::Pserver);
  CHECK(ps.currentEndpoint == "p:2");
  CHECK_THAT(errorText(specOf(tf("worker", 2))),
             Contains("TF_CONFIG task.index 2 is out of range for 2 worker task(s)"));
  CHECK_THAT(errorText(specOf(tf("chief", 1))),
             Contains("task.index 1 is out of range for 1 chief task(s)"));
  CHECK_THAT(errorText(specOf(tf("evaluator", 0))),
             Contains("\"evaluator\": oar has no evaluator role yet"));
}

TEST_CASE("a node never trains alone by mistake: mixed, half or unsupported conventions fail",
          "[runtime][cluster]") {
  CHECK(requireValue(specOf({})).role == Role::None); // nothing set: one machine, as asked
  CHECK_THAT(errorText(specOf({{"TF_CONFIG", "{}"}, {"PADDLE_TRAINING_ROLE", "TRAINER"}})),
             Contains("the environment sets TF_CONFIG (TF_CONFIG) and PADDLE_TRAINING_ROLE "
                      "(Paddle); a node follows one launch convention"));
  CHECK_THAT(errorText(specOf({{"PADDLE_PSERVERS_IP_PORT_LIST", "h:1"}})),
             Contains("PADDLE_PSERVERS_IP_PORT_LIST is set but neither PADDLE_TRAINING_ROLE nor "
                      "TRAINING_ROLE is"));
  CHECK_THAT(errorText(specOf({{"MS_ROLE", "MS_PSERVER"}, {"MS_SERVER_NUM", "1"}})),
             Contains("MindSpore's convention sets MS_ROLE, MS_SERVER_NUM but not MS_SCHED_HOST, "
                      "MS_SCHED_PORT, MS_WORKER_NUM"));
  CHECK_THAT(errorText(specOf({{"DMLC_NUM_SERVER", "2"}})),
             Contains("ps-lite's convention sets DMLC_NUM_SERVER but not DMLC_ROLE, "
                      "DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT, DMLC_NUM_WORKER"));
  CHECK_THAT(errorText(specOf({{"DMLC_ROLE", "worker"}, {"MS_ROLE", "MS_WORKER"}})),
             Contains("the environment sets MS_ROLE (MindSpore) and DMLC_ROLE (ps-lite)"));
  CHECK_THAT(errorText(specOf({{"OMPI_COMM_WORLD_RANK", "1"}, {"TRAINING_ROLE", "TRAINER"}})),
             Contains("(Paddle) and OMPI_COMM_WORLD_RANK (MPI)"));
}

TEST_CASE("MindSpore, ps-lite and MPI variables name the scheduler, the role and the counts",
          "[runtime][cluster]") {
  ClusterSpec ms = requireValue(specOf({{"MS_ROLE", "MS_PSERVER"},
                                        {"MS_SCHED_HOST", "10.0.0.9"},
                                        {"MS_SCHED_PORT", "8119"},
                                        {"MS_SERVER_NUM", "2"},
                                        {"MS_WORKER_NUM", "3"},
                                        {"OAR_NODE_HOST", "10.0.0.4"}}));
  CHECK(ms.role == Role::Pserver);
  CHECK(ms.scheduler == "10.0.0.9:8119");
  CHECK(ms.pserverCount == 2);
  CHECK(ms.trainers == 3);
  CHECK(ms.nodeHost == "10.0.0.4");
  ClusterSpec ps = requireValue(specOf({{"DMLC_ROLE", "scheduler"},
                                        {"DMLC_PS_ROOT_URI", "127.0.0.1"},
                                        {"DMLC_PS_ROOT_PORT", "9000"},
                                        {"DMLC_NUM_SERVER", "1"},
                                        {"DMLC_NUM_WORKER", "2"}}));
  CHECK(ps.role == Role::Scheduler);
  CHECK(ps.scheduler == "127.0.0.1:9000");
  CHECK(ps.nodeHost == "127.0.0.1");
  CHECK_THAT(errorText(specOf({{"DMLC_ROLE", "boss"},
                               {"DMLC_PS_ROOT_URI", "h"},
                               {"DMLC_PS_ROOT_PORT", "1"},
                               {"DMLC_NUM_SERVER", "1"},
                               {"DMLC_NUM_WORKER", "1"}})),
             Contains("DMLC_ROLE is \"boss\"; expected scheduler, server or worker"));
  CHECK_THAT(errorText(specOf({{"MS_ROLE", "MS_WORKER"},
                               {"MS_SCHED_HOST", "h"},
                               {"MS_SCHED_PORT", "http"},
                               {"MS_SERVER_NUM", "1"},
                               {"MS_WORKER_NUM", "1"}})),
             Contains("MS_SCHED_PORT is \"http\"; expected a port number"));

  // MPI: the first --pserver-count ranks serve, the rest train; rank 0 runs the scheduler too.
  ClusterSpec rank =
      requireValue(specOf({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "5"}}));
  CHECK(rank.mpiRank == 3);
  CHECK_THAT(errorText(placeMpiRank(rank)), Contains("give --scheduler HOST:PORT"));
  rank.scheduler = "127.0.0.1:7000", rank.pserverCount = 2;
  REQUIRE_OK(placeMpiRank(rank));
  CHECK(rank.role == Role::Trainer);
  CHECK(rank.askedId == 1);
  CHECK(rank.trainers == 3);
  CHECK_FALSE(rank.runsScheduler);
  ClusterSpec zero = requireValue(specOf({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}));
  zero.scheduler = "127.0.0.1:7000", zero.pserverCount = 1;
  REQUIRE_OK(placeMpiRank(zero));
  CHECK(zero.role == Role::Pserver);
  CHECK(zero.askedId == 0);
  CHECK(zero.runsScheduler);
  zero.pserverCount = 2;
  CHECK_THAT(errorText(placeMpiRank(zero)), Contains("2 MPI ranks leave no trainer"));

  // Slurm sets SLURM_PROCID in every process of a job: alone it changes nothing.
  ClusterSpec task = requireValue(specOf({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}}));
  CHECK(task.role == Role::None);
  CHECK(task.slurmRank == 2);
  CHECK_FALSE(useSlurmRank(task)); // no --pserver-count: a single-machine run
  task.pserverCount = 1, task.scheduler = "127.0.0.1:7000";
  REQUIRE(useSlurmRank(task));
  REQUIRE_OK(placeMpiRank(task));
  CHECK(task.role == Role::Trainer);
  CHECK(task.askedId == 1);
  CHECK(task.trainers == 3);
  ClusterSpec paddle = requireValue(specOf({{"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "1"},
                                            {"PADDLE_TRAINING_ROLE", "TRAINER"},
                                            {"PADDLE_PSERVERS_IP_PORT_LIST", "h:1"}}));
  paddle.pserverCount = 1;
  CHECK_FALSE(useSlurmRank(paddle)); // a role of its own wins
}

TEST_CASE("Paddle's collective variables and TF_CONFIG without ps make collective trainers",
          "[runtime][cluster]") {
  // Paddle's collective launch sets no role: every node is a trainer.
  ClusterSpec paddle =
      requireValue(specOf({{"PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.2:6170"},
                           {"PADDLE_CURRENT_ENDPOINT", "10.0.0.2:6170"},
                           {"PADDLE_TRAINER_ID", "1"},
                           {"PADDLE_TRAINERS_NUM", "2"}}));
  CHECK(paddle.role == Role::Trainer);
  CHECK(paddle.trainerId == 1);
  CHECK(paddle.trainers == 2);
  CHECK(paddle.trainerEndpoints == std::vector<std::string>{"10.0.0.1:6170", "10.0.0.2:6170"});
  CHECK(paddle.currentEndpoint == "10.0.0.2:6170");
  CHECK_THAT(errorText(specOf({{"PADDLE_TRAINER_ENDPOINTS", "10.0.0.1:6170,10.0.0.2:6170"},
                               {"PADDLE_TRAINERS_NUM", "3"}})),
             Contains("PADDLE_TRAINER_ENDPOINTS lists 2 trainers but PADDLE_TRAINERS_NUM is 3"));
  ClusterSpec tf = requireValue(
      specOf({{"TF_CONFIG", R"({"cluster": {"chief": ["10.0.0.1:2222"], "worker": ["10.0.0.2:2222",
          "10.0.0.3:2222"]}, "task": {"type": "worker", "index": 1}})"}}));
  CHECK(tf.role == Role::Trainer);
  CHECK(tf.trainerId == 2);
  CHECK(tf.pservers.empty());
  CHECK(tf.trainerEndpoints ==
        std::vector<std::string>{"10.0.0.1:2222", "10.0.0.2:2222", "10.0.0.3:2222"});
  CHECK(tf.currentEndpoint == "10.0.0.3:2222");
}

TEST_CASE("MPI and Slurm ranks of a collective job all train, trainer i being rank i",
          "[runtime][cluster][collective]") {
  ClusterSpec mpi =
      requireValue(specOf({{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "3"}}));
  placeCollectiveRank(mpi);
  CHECK(mpi.role == Role::Trainer);
  CHECK(mpi.trainerId == 2);
  CHECK(mpi.trainers == 3);
  // Slurm's task rank places a collective trainer without --pserver-count.
  ClusterSpec task = requireValue(specOf({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "4"}}));
  CHECK_FALSE(useSlurmRank(task));
  REQUIRE(useSlurmRank(task, /*collective=*/true));
  placeCollectiveRank(task);
  CHECK(task.trainerId == 1);
  CHECK(task.trainers == 4);
}

TEST_CASE("a rank finds its own address on the route to trainer 0's", "[runtime][collective]") {
  CHECK(requireValue(localAddressToward("127.0.0.1")) == "127.0.0.1");
  CHECK_THAT(errorText(localAddressToward("no-such-host.invalid")),
             Contains("cannot resolve no-such-host.invalid"));
}
