// Cluster specs from the environment.
#include "runtime/cluster.h"

#include "ir/error.h"
#include "transpiler/config.h"
#include "llvm/Support/JSON.h"

namespace oar::runtime {

static llvm::Expected<ClusterSpec> fromTfConfig(llvm::StringRef text) {
  auto json = llvm::json::parse(text);
  if (!json)
    return makeError("TF_CONFIG is not valid JSON: {0}", llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *cluster = root ? root->getObject("cluster") : nullptr;
  const llvm::json::Object *task = root ? root->getObject("task") : nullptr;
  if (!cluster || !task)
    return makeError("TF_CONFIG needs \"cluster\" and \"task\" objects");
  ClusterSpec spec;
  auto list = [&](const char *key) {
    std::vector<std::string> out;
    if (const llvm::json::Array *a = cluster->getArray(key))
      for (const llvm::json::Value &v : *a)
        if (auto s = v.getAsString())
          out.push_back(s->str());
    return out;
  };
  spec.pservers = list("ps");
  std::vector<std::string> workers = list("worker");
  spec.trainers = static_cast<int64_t>(workers.size());
  auto type = task->getString("type");
  auto index = task->getInteger("index");
  if (!type || !index)
    return makeError("TF_CONFIG task needs \"type\" and \"index\"");
  if (*type == "ps") {
    spec.role = "pserver";
    if (*index < 0 || *index >= static_cast<int64_t>(spec.pservers.size()))
      return makeError("TF_CONFIG task.index {0} is out of range for {1} ps", *index,
                       spec.pservers.size());
    spec.currentEndpoint = spec.pservers[*index];
  } else if (*type == "worker" || *type == "chief") {
    spec.role = "trainer";
    spec.trainerId = *index;
  } else {
    return makeError("TF_CONFIG task.type \"{0}\" must be ps or worker", *type);
  }
  return spec;
}

static llvm::Expected<ClusterSpec> clusterFromRoleEnv(const GetEnv &getenv);

llvm::Expected<ClusterSpec> clusterFromEnv(const GetEnv &getenv) {
  auto spec = clusterFromRoleEnv(getenv);
  if (spec)
    if (const char *job = getenv("OAR_JOB_ID"); job && *job)
      spec->jobId = job;
  return spec;
}

static llvm::Expected<ClusterSpec> clusterFromRoleEnv(const GetEnv &getenv) {
  if (const char *tf = getenv("TF_CONFIG"); tf && *tf)
    return fromTfConfig(tf);
  ClusterSpec spec;
  const char *role = getenv("PADDLE_TRAINING_ROLE");
  if (!role || !*role)
    return spec; // not part of a job
  llvm::StringRef r(role);
  if (r.equals_insensitive("trainer"))
    spec.role = "trainer";
  else if (r.equals_insensitive("pserver"))
    spec.role = "pserver";
  else
    return makeError("PADDLE_TRAINING_ROLE is \"{0}\"; expected TRAINER or PSERVER", role);
  const char *port = getenv("PADDLE_PSERVER_PORT");
  if (const char *list = getenv("PADDLE_PSERVERS_IP_PORT_LIST"); list && *list) {
    spec.pservers = splitEndpoints(list);
  } else if (const char *ips = getenv("PADDLE_PSERVER_IPS"); ips && *ips) {
    if (!port)
      return makeError("PADDLE_PSERVER_IPS is set but PADDLE_PSERVER_PORT is not");
    for (const std::string &ip : splitEndpoints(ips))
      spec.pservers.push_back(ip + ":" + port);
  }
  auto number = [&](const char *name, int64_t &out) -> llvm::Error {
    const char *v = getenv(name);
    if (!v || !*v)
      return llvm::Error::success();
    if (llvm::StringRef(v).getAsInteger(10, out))
      return makeError("{0} is \"{1}\"; expected an integer", name, v);
    return llvm::Error::success();
  };
  if (llvm::Error err = number("PADDLE_TRAINERS", spec.trainers))
    return err;
  if (llvm::Error err = number("PADDLE_TRAINER_ID", spec.trainerId))
    return err;
  if (const char *ep = getenv("PADDLE_CURRENT_ENDPOINT"); ep && *ep)
    spec.currentEndpoint = ep;
  else if (const char *ip = getenv("PADDLE_CURRENT_IP"); ip && *ip && port)
    spec.currentEndpoint = std::string(ip) + ":" + port;
  return spec;
}

llvm::Expected<size_t> pserverIndex(const ClusterSpec &spec) {
  for (size_t i = 0; i < spec.pservers.size(); ++i)
    if (spec.pservers[i] == spec.currentEndpoint)
      return i;
  return makeError("this pserver's endpoint \"{0}\" is not in the pserver list ({1}); set "
                   "--endpoint or PADDLE_CURRENT_IP/PADDLE_CURRENT_ENDPOINT",
                   spec.currentEndpoint, llvm::join(spec.pservers, ","));
}

} // namespace oar::runtime
