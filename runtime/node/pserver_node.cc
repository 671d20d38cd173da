// A pserver node: its start (startup, --load's blocks), its loop, and its save.
#include "checkpoint/load_pserver.h"
#include "executor/save_set.h"
#include "executor/threads.h"
#include "ops/op_registry.h"
#include "runtime/node/node.h"
#include "runtime/node/run_env.h"
#include "runtime/node/save_lock.h"
#include "runtime/pserver/pserver_checkpoint.h"
#include "support/error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar::runtime {

namespace {

std::string inDir(llvm::StringRef dir, const std::string &file) {
  llvm::SmallString<256> p(dir);
  llvm::sys::path::append(p, file);
  return p.str().str();
}

const proto::Op *listenOp(const proto::Program &prog) {
  for (const proto::Op &op : prog.blocks(0).ops())
    if (op.type() == "listen_and_serv")
      return &op;
  return nullptr;
}

/// Removes what an earlier save of another shape left in `dir`: the blocks of pservers past
/// this job's count, and the dense files of vars this job saves in pieces (tables, sliced
/// params' optimizer state), which a reader would otherwise take. Pserver 0 does it.
void removeStaleSaveFiles(const proto::Program &prog, llvm::StringRef dir) {
  int64_t count = std::max(1, prog.dist().pservers_size());
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    int64_t i = 0;
    if (name.consume_front("pserver.") && !name.getAsInteger(10, i) && i >= count)
      llvm::sys::fs::remove_directories(it->path());
  }
  auto blocks = pserverBlocks(prog);
  if (!blocks) {
    llvm::consumeError(blocks.takeError()); // the save itself reports it
    return;
  }
  for (const SavedBlock &b : *blocks)
    if (!b.param)
      llvm::sys::fs::remove(inDir(dir, b.whole + ".npy"));
  for (const proto::Op &op : prog.blocks(0).ops())
    if (op.type() == "sparse_table")
      llvm::sys::fs::remove(inDir(
          dir, ops::AttrReader(op, *ops::lookupOp("sparse_table")).getString("table") + ".npy"));
}

/// Saves this pserver's blocks (params and optimizer state) as DIR/pserver.<i>/ with their
/// index, replaced as a set.
llvm::Error savePserverBlocks(const proto::Program &prog, const Scope &scope,
                              llvm::StringRef saveDir) {
  std::string dir = inDir(saveDir, "pserver." + std::to_string(prog.dist().pserver_index()));
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  if (llvm::Error err = finishInterruptedSaves(dir))
    return err;
  if (prog.dist().pserver_index() == 0)
    removeStaleSaveFiles(prog, saveDir);
  SaveSet files(dir);
  if (llvm::Error err = stagePserverBlocks(prog, scope, dir, files))
    return err;
  return files.commit();
}

/// What the node gives its pserver loop: its port, keys, checkpoints, log and hooks.
llvm::Expected<PserverRun> pserverRun(const proto::Program &prog, const Node &node) {
  const NodeOptions &o = node.options;
  if (node.curve.enabled() && node.curve.allowed.empty())
    return makeError("a pserver with a CURVE key pair needs the trainers' public keys to accept "
                     "(--curve-allow FILE)");
  PserverRun run;
  run.learningRate = o.learningRate;
  run.timeouts = o.timeouts;
  run.bind = o.place.bind;
  run.heldPort = node.heldPort;
  run.log = node.log;
  // The pserver's thread budget (--num-threads) runs its optimize blocks side by side.
  run.serviceThreads = computeThreads() > 1 ? computeThreads() : 0;
  run.computeThreads = node.computeThreads;
  run.training = !o.evalOnly;
  // Distributed tables save into the save's tables/ directory, a part per pserver.
  if (!o.saveDir.empty())
    run.tableSaveDir = inDir(o.saveDir, "tables");
  if (!o.saveDir.empty() && !o.trainer.keepBest.empty())
    run.bestTableSaveDir = inDir(inDir(o.saveDir, "best"), "tables");
  run.jobId = node.cluster.jobId;
  run.elastic = o.place.elastic;
  run.hybrid = prog.dist().hybrid();
  run.goneTrainers = node.goneTrainers;
  if (!o.checkpoints.dir.empty())
    run.checkpointDir =
        inDir(o.checkpoints.dir, "pserver." + std::to_string(prog.dist().pserver_index()));
  run.checkpointEvery = o.checkpoints.every;
  run.checkpointKeep = o.checkpoints.keep;
  run.curve = node.curve;
  run.shouldStop = node.shouldStop;
  run.checkpointRequested = node.checkpointRequested;
  return run;
}

} // namespace

llvm::Error runPserver(const NodePrograms &progs, const Node &node) {
  const NodeOptions &o = node.options;
  if (!listenOp(progs.main))
    return makeError("this program has no listen_and_serv op; is it a pserver program?");
  std::string lockJob = saveLockJob(node.cluster.jobId, progs.main.dist().plan_digest());
  auto saveLock = lockSaveDir(o.saveDir, lockJob);
  if (!saveLock)
    return saveLock.takeError();
  // Checkpoints too: another job's pservers would delete ours as torn or old. A restarted
  // pserver of this job shares the hold with the ones that kept running.
  auto checkpointLock = lockSaveDir(o.checkpoints.dir, lockJob, "--checkpoint-dir");
  if (!checkpointLock)
    return checkpointLock.takeError();
  RunEnv env;
  env.program = &progs.main;
  env.pserver = o.pserver;
  if (llvm::Error err = pserverRun(progs.main, node).moveInto(env.pserverRun))
    return err;
  Executor exec;
  exec.setEnv(&env);
  Scope scope;
  if (llvm::Error err = exec.run(progs.startup, scope))
    return addContext(std::move(err), "pserver startup");
  // --load: this pserver's blocks cut from the whole vars, then (in the loop's start) its rows
  // of every table, from a checkpoint of any layout.
  std::optional<CheckpointReader> ckpt;
  if (!o.loadDir.empty()) {
    auto opened = CheckpointReader::open(o.loadDir, o.loadStep);
    if (!opened)
      return opened.takeError();
    ckpt = std::move(*opened);
    auto loaded = loadPserverBlocks(progs.main, scope, *ckpt);
    if (!loaded)
      return loaded.takeError();
    env.pserverRun.loadFrom = &*ckpt;
    env.pserverRun.loaded = std::move(*loaded);
  }
  if (llvm::Error err = exec.run(progs.main, scope, 0)) {
    if (env.trainersFailed)
      return llvm::make_error<TrainersFailedError>(llvm::toString(std::move(err)));
    return err;
  }
  if (!o.saveDir.empty())
    return savePserverBlocks(progs.main, scope, o.saveDir);
  return llvm::Error::success();
}

} // namespace oar::runtime
