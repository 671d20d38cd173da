// TF_CONFIG, as TensorFlow's ParameterServerStrategy reads it.
#include "runtime/cluster/cluster_conventions.h"
#include "support/error.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"

namespace oar::runtime {

llvm::Expected<ClusterSpec> clusterFromTfConfig(llvm::StringRef text) {
  auto json = llvm::json::parse(text);
  if (!json)
    return makeError("TF_CONFIG is not valid JSON: {0}", llvm::toString(json.takeError()));
  const llvm::json::Object *root = json->getAsObject();
  const llvm::json::Object *cluster = root ? root->getObject("cluster") : nullptr;
  const llvm::json::Object *task = root ? root->getObject("task") : nullptr;
  if (!cluster || !task)
    return makeError("TF_CONFIG needs \"cluster\" and \"task\" objects");
  auto list = [&](const char *key) {
    std::vector<std::string> out;
    if (const llvm::json::Array *a = cluster->getArray(key))
      for (const llvm::json::Value &v : *a)
        if (auto s = v.getAsString())
          out.push_back(s->str());
    return out;
  };
  ClusterSpec spec;
  spec.pservers = list("ps");
  int64_t chiefs = static_cast<int64_t>(list("chief").size());
  if (chiefs > 1)
    return makeError("TF_CONFIG cluster.chief lists {0} tasks; a job has one chief", chiefs);
  // The chief is trainer 0 (it evaluates and saves, as trainer 0 does); workers follow it.
  spec.trainers = chiefs + static_cast<int64_t>(list("worker").size());
  spec.trainerEndpoints = list("chief"); // a collective job's ranks, the chief first
  llvm::append_range(spec.trainerEndpoints, list("worker"));
  auto type = task->getString("type");
  auto index = task->getInteger("index");
  if (!type || !index)
    return makeError("TF_CONFIG task needs \"type\" and \"index\"");
  auto inRange = [&](llvm::StringRef kind, int64_t count) -> llvm::Error {
    if (*index < 0 || *index >= count)
      return makeError("TF_CONFIG task.index {0} is out of range for {1} {2} task(s)", *index,
                       count, kind);
    return llvm::Error::success();
  };
  if (*type == "ps") {
    if (llvm::Error err = inRange("ps", static_cast<int64_t>(spec.pservers.size())))
      return err;
    spec.role = Role::Pserver;
    spec.currentEndpoint = spec.pservers[*index];
  } else if (*type == "chief" || *type == "worker") {
    bool chief = *type == "chief";
    if (llvm::Error err = inRange(*type, chief ? chiefs : spec.trainers - chiefs))
      return err;
    spec.role = Role::Trainer;
    spec.trainerId = chief ? 0 : chiefs + *index;
    spec.currentEndpoint = spec.trainerEndpoints[spec.trainerId];
  } else if (*type == "evaluator") {
    return makeError("TF_CONFIG task.type \"evaluator\": oar has no evaluator role yet; evaluate a "
                     "saved model with oar-executor --eval-only --load DIR");
  } else {
    return makeError("TF_CONFIG task.type \"{0}\" must be chief, worker or ps", *type);
  }
  return spec;
}

} // namespace oar::runtime
