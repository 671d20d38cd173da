// A node's programs: a transpiled directory's, or the single-machine pair transpiled here for
// the node's role.
#include "runtime/node/node.h"

#include "ops/verify.h"
#include "support/error.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

namespace {

std::string inDir(llvm::StringRef dir, const std::string &file) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return p.str().str();
}

llvm::Expected<NodePrograms> loadPair(const std::string &main, const std::string &startup) {
  auto m = loadVerifiedProgram(main);
  if (!m)
    return m.takeError();
  auto s = loadVerifiedProgram(startup);
  if (!s)
    return s.takeError();
  return NodePrograms{std::move(*m), std::move(*s)};
}

/// Each trainer draws its own dropout masks: the trainer program is the same for all of them.
void drawDropoutAs(proto::Program &main, int64_t trainerId) {
  for (proto::Block &block : *main.mutable_blocks())
    for (proto::Op &op : *block.mutable_ops())
      if (op.type() == "dropout")
        setAttr(op, "trainer_id", trainerId);
}

llvm::Expected<NodePrograms> loadNodePrograms(const Node &node) {
  const ClusterSpec &c = node.cluster;
  llvm::StringRef dir = node.options.dir;
  if (!dir.empty()) { // a transpiled directory
    if (c.role == Role::Trainer)
      return loadPair(inDir(dir, "trainer.pb"), inDir(dir, "trainer.startup.pb"));
    auto trainer = loadProgram(inDir(dir, "trainer.pb"));
    if (!trainer)
      return trainer.takeError();
    ClusterSpec withList = c;
    withList.pservers.assign(trainer->dist().pservers().begin(), trainer->dist().pservers().end());
    auto index = pserverIndex(withList);
    if (!index)
      return index.takeError();
    std::string stem = "pserver." + std::to_string(*index);
    return loadPair(inDir(dir, stem + ".pb"), inDir(dir, stem + ".startup.pb"));
  }
  auto single = node.singleMachine ? llvm::Expected<NodePrograms>(*node.singleMachine)
                                   : loadPair(node.options.mainPath, node.options.startupPath);
  if (!single)
    return single.takeError();
  DistributeConfig config = node.options.config;
  config.trainers = c.trainers;
  // A trainer that joined an elastic job (an id past the count) trains on shard id mod count.
  config.trainerId = c.role == Role::Trainer ? c.trainerId % std::max<int64_t>(c.trainers, 1) : 0;
  config.pservers = c.pservers;
  auto result = transpile(single->main, single->startup, config);
  if (!result)
    return result.takeError();
  if (c.role == Role::Trainer)
    return NodePrograms{result->trainer(), result->trainerStartup()};
  auto index = pserverIndex(c);
  if (!index)
    return index.takeError();
  return NodePrograms{result->pserver(*index), result->pserverStartup(*index)};
}

} // namespace

llvm::Expected<NodePrograms> nodePrograms(const Node &node) {
  auto progs = loadNodePrograms(node);
  if (progs && node.cluster.role == Role::Trainer)
    drawDropoutAs(progs->main, node.cluster.trainerId);
  return progs;
}

} // namespace oar::runtime
