// Paddle's launch variables: Fluid 1.x (paddle.distributed.launch_ps) and 2.x fleet.
#include "runtime/cluster/cluster_conventions.h"
#include "support/env_names.h"
#include "support/error.h"
#include "transpiler/config.h"

namespace oar::runtime {

namespace {
/// One setting that either of two variables may carry; both set and different is an error.
struct EitherOf {
  const char *first, *second;
  llvm::Expected<std::string> read(const GetEnv &getenv) const {
    const char *a = getenv(first), *b = getenv(second);
    bool hasA = a && *a, hasB = b && *b;
    if (hasA && hasB && !llvm::StringRef(a).equals_insensitive(b))
      return makeError("{0} is \"{1}\" but {2} is \"{3}\"; set one, or both the same", first, a,
                       second, b);
    return std::string(hasA ? a : hasB ? b : "");
  }
};
} // namespace

static llvm::Error readInteger(llvm::StringRef name, llvm::StringRef text, int64_t &out) {
  if (!text.empty() && text.getAsInteger(10, out))
    return makeError("{0} is \"{1}\"; expected an integer", name, text);
  return llvm::Error::success();
}

llvm::Expected<ClusterSpec> clusterFromPaddle(const GetEnv &getenv, llvm::StringRef firstSet) {
  auto set = [&](const char *name) -> const char * {
    const char *v = getenv(name);
    return v && *v ? v : nullptr;
  };
  ClusterSpec spec;
  auto role = EitherOf{env::kPaddleTrainingRole, env::kTrainingRole}.read(getenv);
  if (!role)
    return role.takeError();
  // Paddle's collective launch sets no role: its nodes are all trainers.
  if (const char *list = set(env::kPaddleTrainerEndpoints)) {
    spec.trainerEndpoints = splitEndpoints(list);
    if (role->empty())
      *role = "TRAINER";
  }
  if (role->empty()) // half a convention: a node meant for a job must not train alone
    return makeError("{0} is set but neither PADDLE_TRAINING_ROLE nor TRAINING_ROLE is: set the "
                     "role (TRAINER or PSERVER), or unset {0} to train on one machine",
                     firstSet);
  if (llvm::StringRef(*role).equals_insensitive("trainer"))
    spec.role = Role::Trainer;
  else if (llvm::StringRef(*role).equals_insensitive("pserver"))
    spec.role = Role::Pserver;
  else
    return makeError("{0} is \"{1}\"; expected TRAINER or PSERVER",
                     set(env::kPaddleTrainingRole) ? env::kPaddleTrainingRole : env::kTrainingRole,
                     *role);

  const char *port = set(env::kPaddlePserverPort);
  if (const char *list = set(env::kPaddlePserversIpPortList)) {
    spec.pservers = splitEndpoints(list);
  } else if (const char *ips = set(env::kPaddlePserverIps)) {
    if (!port)
      return makeError("PADDLE_PSERVER_IPS is set but PADDLE_PSERVER_PORT is not");
    for (const std::string &ip : splitEndpoints(ips))
      spec.pservers.push_back(ip + ":" + port);
  }
  auto trainers = EitherOf{env::kPaddleTrainers, env::kPaddleTrainersNum}.read(getenv);
  if (!trainers)
    return trainers.takeError();
  if (llvm::Error err =
          readInteger(set(env::kPaddleTrainers) ? env::kPaddleTrainers : env::kPaddleTrainersNum,
                      *trainers, spec.trainers))
    return err;
  if (const char *id = set(env::kPaddleTrainerId))
    if (llvm::Error err = readInteger(env::kPaddleTrainerId, id, spec.trainerId))
      return err;
  if (!spec.trainerEndpoints.empty()) {
    auto listed = static_cast<int64_t>(spec.trainerEndpoints.size());
    if (spec.trainers == 0)
      spec.trainers = listed;
    else if (spec.trainers != listed)
      return makeError("{0} lists {1} trainers but {2} is {3}", env::kPaddleTrainerEndpoints,
                       listed,
                       set(env::kPaddleTrainers) ? env::kPaddleTrainers : env::kPaddleTrainersNum,
                       spec.trainers);
  }

  // A pserver's own endpoint: given whole, or 1.x's IP + the pservers' port, or 2.x's pod IP +
  // its port.
  if (const char *ep = set(env::kPaddleCurrentEndpoint))
    spec.currentEndpoint = ep;
  else if (const char *ip = set(env::kPaddleCurrentIp); ip && port)
    spec.currentEndpoint = std::string(ip) + ":" + port;
  else if (const char *pod = set(env::kPodIp), *own = set(env::kPaddlePort); pod && own)
    spec.currentEndpoint = std::string(pod) + ":" + own;
  return spec;
}

} // namespace oar::runtime
