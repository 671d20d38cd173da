// deploy/k8s/: the manifests are read as Kubernetes would read them (YAML, every document), their
// counts agree with each other, and the nodes they describe, started here as local processes
// with the same commands and environments, train the job oar-launch trains.
#include <fstream>
#include <map>

#include "executor/npy.h"
#include "runtime/cluster/launcher.h"
#include "support/env_names.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/job.h"
#include "test/helpers/ports.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/YAMLParser.h"

using namespace oar;
using Catch::Matchers::Contains;

namespace {

/// A YAML value: a scalar, a mapping (keys and values in order) or a sequence. (Parallel
/// vectors: a std::pair of the incomplete Yaml is not allowed in a member of Yaml.)
struct Yaml {
  std::string scalar;
  std::vector<std::string> keys;
  std::vector<Yaml> values, seq;
  /// The value at a dotted path of mapping keys ("spec.template.spec"); nullptr if absent.
  const Yaml *at(llvm::StringRef path) const {
    const Yaml *node = this;
    for (llvm::StringRef key : llvm::split(path, '.')) {
      const Yaml *next = nullptr;
      for (size_t i = 0; i < node->keys.size(); ++i)
        if (node->keys[i] == key)
          next = &node->values[i];
      if (!next)
        return nullptr;
      node = next;
    }
    return node;
  }
  std::string str(llvm::StringRef path) const {
    const Yaml *v = at(path);
    return v ? v->scalar : "";
  }
};

Yaml convert(llvm::yaml::Node *node) {
  Yaml out;
  llvm::SmallString<64> storage;
  if (auto *s = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(node)) {
    out.scalar = s->getValue(storage).str();
  } else if (auto *m = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(node)) {
    for (llvm::yaml::KeyValueNode &kv : *m) {
      auto *key = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(kv.getKey());
      REQUIRE(key);
      out.keys.push_back(key->getValue(storage).str());
      out.values.push_back(convert(kv.getValue()));
    }
  } else if (auto *q = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node)) {
    for (llvm::yaml::Node &item : *q)
      out.seq.push_back(convert(&item));
  }
  return out;
}

/// Every document of every manifest, by "Kind/name".
std::map<std::string, Yaml> readManifests() {
  std::map<std::string, Yaml> docs;
  for (const char *file : {"scheduler.yaml", "pservers.yaml", "trainers.yaml"}) {
    std::string path = sourceDir() + "/deploy/k8s/" + file;
    std::string text = readFile(path);
    REQUIRE_FALSE(text.empty());
    llvm::SourceMgr sm;
    llvm::yaml::Stream stream(text, sm);
    for (llvm::yaml::Document &doc : stream) {
      Yaml y = convert(doc.getRoot());
      docs[y.str("kind") + "/" + y.str("metadata.name")] = y;
    }
    INFO(path);
    REQUIRE_FALSE(stream.failed());
  }
  return docs;
}

/// A container's environment: plain values, and the pod IP (fieldRef) as 127.0.0.1.
std::map<std::string, std::string> envOf(const Yaml &container) {
  std::map<std::string, std::string> env;
  if (const Yaml *list = container.at("env"))
    for (const Yaml &e : list->seq)
      env[e.str("name")] = e.at("valueFrom.fieldRef") ? std::string("127.0.0.1") : e.str("value");
  return env;
}

/// The first container of a workload's pod template.
const Yaml &containerOf(const Yaml &workload) {
  const Yaml *containers = workload.at("spec.template.spec.containers");
  REQUIRE(containers);
  REQUIRE(containers->seq.size() == 1);
  return containers->seq[0];
}

} // namespace

TEST_CASE("the Kubernetes manifests agree on the scheduler, the counts and the keys",
          "[deploy][cluster]") {
  auto docs = readManifests();
  for (const char *name : {"Service/oar-scheduler", "Job/oar-scheduler", "Service/oar-pserver",
                           "StatefulSet/oar-pserver", "Job/oar-trainer"})
    REQUIRE(docs.count(name));
  const Yaml &pservers = docs["StatefulSet/oar-pserver"], &trainers = docs["Job/oar-trainer"];
  CHECK(trainers.str("spec.completionMode") == "Indexed"); // JOB_COMPLETION_INDEX is the id
  CHECK(trainers.str("spec.completions") == trainers.str("spec.parallelism"));
  std::string schedulerPort = docs["Service/oar-scheduler"].at("spec.ports")->seq[0].str("port");
  for (const Yaml *w :
       {static_cast<const Yaml *>(&docs["Job/oar-scheduler"]), &pservers, &trainers}) {
    auto env = envOf(containerOf(*w));
    INFO(w->str("metadata.name"));
    CHECK(env["DMLC_PS_ROOT_URI"] == "oar-scheduler");
    CHECK(env["DMLC_PS_ROOT_PORT"] == schedulerPort);
    CHECK(env["DMLC_NUM_SERVER"] == pservers.str("spec.replicas"));
    CHECK(env["DMLC_NUM_WORKER"] == trainers.str("spec.completions"));
    CHECK(env["OAR_JOB_ID"] == "oar-k8s");
  }
  // Every pod selector finds its pods.
  CHECK(docs["Service/oar-scheduler"].str("spec.selector.app") ==
        docs["Job/oar-scheduler"].str("spec.template.metadata.labels.app"));
  CHECK(pservers.str("spec.selector.matchLabels.app") ==
        pservers.str("spec.template.metadata.labels.app"));
}

TEST_CASE("the nodes the Kubernetes manifests describe, run as local processes, train the job "
          "oar-launch trains",
          "[deploy][cluster][e2e]") {
  auto docs = readManifests();
  std::string dir = scratchDir("k8s_local");
  makeFitALine(dir + "/model", "--lr=0.01 --batch-size=20 --epochs=2");
  run("cd " + dir + " && mkdir keys && cd keys && " + binDir() + "/oar-keygen pserver trainer");
  run(binDir() + "/oar-launch --server-num=2 --worker-num=2 --mode=sync --save " + dir +
      "/launch " + dir + "/model > " + dir + "/launch.log 2>&1");

  // What a cluster provides, here: the Service name and every pod IP are 127.0.0.1, and pods
  // that share this host get ports of their own instead of the manifests' fixed ones.
  int pserverCount = std::stoi(docs["StatefulSet/oar-pserver"].str("spec.replicas"));
  int trainerCount = std::stoi(docs["Job/oar-trainer"].str("spec.completions"));
  // Each port held from here on, and handed to the pod that serves it.
  std::vector<std::shared_ptr<runtime::HeldPort>> held;
  std::vector<int> ports;
  for (int i = 0; i < 1 + pserverCount; ++i) {
    held.push_back(holdPort());
    handOver(*held.back());
    ports.push_back(held.back()->port());
  }
  std::string script = "cd " + dir + "\n";
  std::vector<std::string> nodes;
  auto addPod = [&](const Yaml &workload, const std::string &node, int index) {
    const Yaml &c = containerOf(workload);
    auto env = envOf(c);
    env["DMLC_PS_ROOT_URI"] = "127.0.0.1";
    env["DMLC_PS_ROOT_PORT"] = std::to_string(ports[0]);
    if (workload.str("spec.completionMode") == "Indexed")
      env["JOB_COMPLETION_INDEX"] = std::to_string(index);
    if (node == "scheduler")
      env[env::kOarListenFd] = std::to_string(held[0]->fd());
    else if (node.rfind("pserver", 0) == 0)
      env[env::kOarListenFd] = std::to_string(held[1 + index]->fd());
    std::string line = "env -i PATH=/usr/bin:/bin";
    for (const char *keep : {"ASAN_OPTIONS", "UBSAN_OPTIONS"}) // the sanitizer build's settings
      if (const char *v = getenv(keep))
        line += std::string(" ") + keep + "=" + v;
    for (const auto &[k, v] : env)
      line += " " + k + "=" + v;
    line += " timeout 120 " + binDir() + "/" + c.at("command")->seq[0].scalar;
    for (const Yaml &a : c.at("args")->seq) {
      std::string arg = a.scalar;
      for (const auto &[k, v] : env) // Kubernetes expands $(VAR) in args from the env
        arg = llvm::join(llvm::split(arg, "$(" + k + ")"), v);
      arg = llvm::join(llvm::split(arg, "0.0.0.0:"), "127.0.0.1:");
      arg = llvm::join(llvm::split(arg, ":7164"), ":" + std::to_string(ports[0]));
      if (node.rfind("pserver", 0) == 0)
        arg = llvm::join(llvm::split(arg, ":6170"), ":" + std::to_string(ports[1 + index]));
      for (const char *mount : {"/model/", "/keys/"})
        if (llvm::StringRef(arg).startswith(mount))
          arg = dir + arg;
      if (arg == "/checkpoints" || arg == "/output")
        arg = dir + arg + "/" + node;
      line += " '" + arg + "'";
    }
    script += line + " > " + node + ".log 2>&1 & pids[" + std::to_string(nodes.size()) + "]=$!\n";
    nodes.push_back(node);
  };
  addPod(docs["Job/oar-scheduler"], "scheduler", 0);
  for (int i = 0; i < pserverCount; ++i)
    addPod(docs["StatefulSet/oar-pserver"], "pserver." + std::to_string(i), i);
  for (int i = 0; i < trainerCount; ++i)
    addPod(docs["Job/oar-trainer"], "trainer." + std::to_string(i), i);
  for (size_t i = 0; i < nodes.size(); ++i)
    script += "wait ${pids[" + std::to_string(i) + "]}; echo \"" + nodes[i] + " $?\"\n";
  writeFile(dir + "/pods.sh", script);
  std::string out = run("bash " + dir + "/pods.sh");
  INFO(script << "\n" << out);
  for (const std::string &node : nodes)
    CHECK_THAT(out, Contains(node + " 0"));
  CHECK_THAT(readFile(dir + "/scheduler.log"),
             Contains("CURVE: accepting the pservers' key") && Contains("every node finished"));
  CHECK_THAT(readFile(dir + "/trainer.1.log"), Contains("this node is trainer 1 of 2"));
  CHECK(sameBits(requireValue(readNpy(dir + "/output/trainer.0/fc_0.w_0.npy")),
                 requireValue(readNpy(dir + "/launch/fc_0.w_0.npy"))));
}
