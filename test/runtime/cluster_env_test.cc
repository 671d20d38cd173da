// Launch conventions' environments: each read whole, none mixed, none half set.
#include <map>

#include "runtime/cluster.h"
#include "test/support/expect.h"

using namespace oar::runtime;
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
  CHECK(ps.role == "pserver");
  CHECK(ps.trainers == 4);
  CHECK(requireValue(pserverIndex(ps)) == 1);
  ClusterSpec tr = requireValue(specOf({{"TRAINING_ROLE", "TRAINER"},
                                        {"PADDLE_PSERVERS_IP_PORT_LIST", "10.0.0.1:6170"},
                                        {"PADDLE_TRAINERS_NUM", "4"},
                                        {"PADDLE_TRAINER_ID", "3"}}));
  CHECK(tr.role == "trainer");
  CHECK(tr.trainerId == 3);
  CHECK(tr.pservers == std::vector<std::string>{"10.0.0.1:6170"});
  // 1.x and 2.x names of one setting may both be set, if they agree.
  CHECK(requireValue(specOf({{"TRAINING_ROLE", "trainer"}, {"PADDLE_TRAINING_ROLE", "TRAINER"}}))
            .role == "trainer");
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
  CHECK(chief.role == "trainer");
  CHECK(chief.trainerId == 0);
  CHECK(chief.trainers == 3);
  CHECK(requireValue(specOf(tf("worker", 0))).trainerId == 1);
  CHECK(requireValue(specOf(tf("worker", 1))).trainerId == 2);
  ClusterSpec ps = requireValue(specOf(tf("ps", 1)));
  CHECK(ps.role == "pserver");
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
  CHECK(requireValue(specOf({})).role.empty()); // nothing set: one machine, as asked
  CHECK_THAT(errorText(specOf({{"TF_CONFIG", "{}"}, {"PADDLE_TRAINING_ROLE", "TRAINER"}})),
             Contains("the environment sets TF_CONFIG (TF_CONFIG) and PADDLE_TRAINING_ROLE "
                      "(Paddle); a node follows one launch convention"));
  CHECK_THAT(errorText(specOf({{"PADDLE_PSERVERS_IP_PORT_LIST", "h:1"}})),
             Contains("PADDLE_PSERVERS_IP_PORT_LIST is set but neither PADDLE_TRAINING_ROLE nor "
                      "TRAINING_ROLE is"));
  CHECK_THAT(errorText(specOf({{"MS_ROLE", "MS_PSERVER"}, {"MS_SERVER_NUM", "1"}})),
             Contains("MS_ROLE is set (MindSpore's convention): its nodes get their endpoints "
                      "from a scheduler (MS_SCHED_HOST, MS_SCHED_PORT), which oar does not have"));
  CHECK_THAT(errorText(specOf({{"DMLC_NUM_SERVER", "2"}})),
             Contains("DMLC_NUM_SERVER is set (ps-lite's convention)"));
}
