// Trainer and pserver nodes.
#include "runtime/node/node.h"
#include "train/learning_rate.h"

#include <map>

#include "checkpoint/load_pserver.h"
#include "executor/finite_check.h"
#include "executor/npy.h"
#include "executor/save_set.h"
#include "executor/threads.h"
#include "ir/names.h"
#include "ops/op_registry.h"
#include "ops/verify.h"
#include "runtime/node/run_env.h"
#include "runtime/node/save_lock.h"
#include "runtime/node/trainer_group.h"
#include "runtime/pserver/pserver_checkpoint.h"
#include "serving/inference_program.h"
#include "serving/score_file.h"
#include "support/error.h"
#include "support/signals.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/FileSystem.h"
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

const proto::Op *listenOp(const proto::Program &prog) {
  for (const proto::Op &op : prog.blocks(0).ops())
    if (op.type() == "listen_and_serv")
      return &op;
  return nullptr;
}

/// Each trainer draws its own dropout masks: the trainer program is the same for all of them.
void drawDropoutAs(proto::Program &main, int64_t trainerId) {
  for (proto::Block &block : *main.mutable_blocks())
    for (proto::Op &op : *block.mutable_ops())
      if (op.type() == "dropout")
        setAttr(op, "trainer_id", trainerId);
}

llvm::Expected<NodePrograms> loadNodePrograms(const NodeOptions &opts, llvm::StringRef dir,
                                              llvm::StringRef mainPath,
                                              llvm::StringRef startupPath) {
  const ClusterSpec &c = opts.cluster;
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
  auto single = loadPair(mainPath.str(), startupPath.str());
  if (!single)
    return single.takeError();
  DistributeConfig config = opts.config;
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

llvm::Expected<NodePrograms> nodePrograms(const NodeOptions &opts, llvm::StringRef dir,
                                          llvm::StringRef mainPath, llvm::StringRef startupPath) {
  auto progs = loadNodePrograms(opts, dir, mainPath, startupPath);
  if (progs && opts.cluster.role == Role::Trainer)
    drawDropoutAs(progs->main, opts.cluster.trainerId);
  return progs;
}

/// How many times in a row a trainer starts recovery over when another pserver is lost during
/// it: each waits at most the connect timeout, so a job whose pservers keep dying still ends.
static constexpr int kMaxRecoveriesInARow = 8;

llvm::Error runTrainer(const NodePrograms &progs, const NodeOptions &opts,
                       std::optional<EvalResult> &testResult) {
  const proto::DistributeInfo &dist = progs.main.dist();
  if (dist.role() != roleName(Role::Trainer))
    return makeError("this program is a {0} program, not a trainer's",
                     dist.role().empty() ? "single-machine" : dist.role());
  auto mode = parseMode(dist.mode());
  if (!mode)
    return addContext(mode.takeError(), "the trainer program");
  if (*mode == Mode::Collective)
    return runCollectiveTrainer(progs, opts, testResult);
  int64_t id = opts.cluster.trainerId;
  if (id < 0 || (id >= dist.trainers() && !opts.elastic))
    return makeError("trainer id {0} is out of range for {1} trainers", id, dist.trainers());
  // Held until this function returns, so no other job saves into the directory meanwhile.
  auto saveLock =
      lockSaveDir(id == 0 ? opts.saveDir : "", saveLockJob(opts.cluster.jobId, dist.plan_digest()));
  if (!saveLock)
    return saveLock.takeError();
  std::vector<std::string> endpoints(dist.pservers().begin(), dist.pservers().end());
  if (opts.curve.enabled() && opts.curve.serverKey.empty())
    return makeError("a trainer with a CURVE key pair needs the pservers' public key "
                     "(--curve-server-key FILE)");
  Communicator comm(id, endpoints, opts.timeouts, opts.curve, stopRequested);
  JobIdentity job{*mode, dist.trainers(), dist.plan_digest(), opts.cluster.jobId};
  if (llvm::Error err = comm.connect(job)) {
    std::string why = llvm::toString(std::move(err));
    comm.abandon(why);
    return makeError("{0}", why);
  }
  if (!opts.computeThreads.empty() && opts.log)
    opts.log(llvm::formatv("trainer {0}: {1}", id, opts.computeThreads).str());
  if (size_t linked = comm.linkedPservers(); linked > 0 && opts.log)
    opts.log(llvm::formatv("trainer {0}: {1} of {2} pserver(s) reached over direct links (ZMTP "
                           "on the trainer's thread, no ZeroMQ I/O thread)",
                           id, linked, endpoints.size())
                 .str());
  if (comm.step() > 0 && opts.log)
    opts.log(llvm::formatv("trainer {0}: the pservers resumed from their checkpoint of step {1}; "
                           "training goes on from there",
                           id, comm.step())
                 .str());
  // A hybrid job's dense params stay on the trainers, which all-reduce their gradients.
  std::unique_ptr<CollectiveGroup> group;
  if (dist.hybrid() && comm.step() > 0) {
    std::string why = llvm::formatv("trainer {0}: the pservers resumed from their checkpoint of "
                                    "step {1}, but a hybrid job's dense params live on the "
                                    "trainers, which keep no checkpoint yet: start it afresh",
                                    id, comm.step())
                          .str();
    comm.abandon(why);
    return makeError("{0}", why);
  }
  if (dist.hybrid()) {
    // A collective stuck on a rank that is gone ends the process (onCollectiveStuck): the
    // pservers first hear why. The trainer's thread is then inside the all-reduce, not using
    // the communicator.
    NodeOptions joining = opts;
    if (opts.onCollectiveStuck)
      joining.onCollectiveStuck = [&comm, end = opts.onCollectiveStuck](const std::string &what) {
        llvm::consumeError(comm.complete(what));
        end(what);
      };
    auto joined = joinTrainers(dist, joining);
    if (!joined) {
      std::string why = llvm::toString(joined.takeError());
      comm.abandon(why);
      return makeError("{0}", why);
    }
    group = std::move(*joined);
  }
  RunEnv env;
  env.comm = &comm;
  env.group = group.get();
  env.collectiveTimeout = opts.timeouts.reply; // as each collective's
  env.program = &progs.main;
  // The device is the calling thread's: chosen here, where the trainer's kernels run.
  if (llvm::Error err = usePlace(opts.place))
    return addContext(std::move(err), "trainer " + std::to_string(id));
  Executor exec(opts.place.device);
  exec.setEnv(&env);
  Scope scope;
  // A bucket still summing when a step fails writes into the scope's gradients: it ends first.
  struct BucketsFirst {
    RunEnv &env;
    ~BucketsFirst() { env.buckets.reset(); }
  } bucketsFirst{env};
  if (llvm::Error err = exec.run(progs.startup, scope))
    return addContext(std::move(err), "trainer " + std::to_string(id) + " startup");
  // A hybrid job's --load: trainer 0 loads the dense state it broadcasts, the pservers the tables.
  if (group && id == 0 && !opts.loadDir.empty())
    if (llvm::Error err =
            loadTrainerState(progs.main, progs.startup, scope, opts.loadDir, "trainer 0")) {
      std::string why = llvm::toString(std::move(err));
      llvm::consumeError(comm.complete(why)); // the pservers stop waiting, and hear why
      return makeError("{0}", why);
    }
  if (group)
    if (llvm::Error err = broadcastState(*group, progs.main, scope)) {
      std::string why = llvm::toString(std::move(err));
      llvm::consumeError(comm.complete(why)); // the pservers stop waiting, and hear why
      return makeError("{0}", why);
    }
  if (opts.learningRate) // a hybrid trainer's dense optimizers (a PS trainer has none)
    if (llvm::Error err = setLearningRate(progs.main, scope, *opts.learningRate))
      return err;
  TrainOptions train = opts.train;
  if (id != 0) // trainer 0 scores the model, as it does at the end
    train.evalEverySteps = 0, train.evalEveryEpoch = false;
  train.trainerId = id % dist.trainers(); // the data shard; a joined trainer shares one
  train.trainers = dist.trainers();
  train.onStep = opts.onStep;
  train.shouldStop = stopRequested;
  train.startStep = comm.step();
  // Async and GEO have no barrier to count steps by: each step moves the trainer's clock, which
  // its messages carry, so that a pserver's checkpoint records where each trainer was.
  if (*mode != Mode::Sync)
    train.afterStep = [&comm, next = train.afterStep](const StepReport &r,
                                                      const Scope &s) -> llvm::Error {
      comm.advanceStep();
      return next ? next(r, s) : llvm::Error::success();
    };
  // A pserver that went away may come back from its checkpoint (restarted with the same flags):
  // wait for it, bring every pserver back to that step, fetch its params and go on from there.
  // Another pserver may be lost while the job goes back (or fetches the params again): that
  // is one more pserver to wait for, so recovery starts over, a bounded number of times.
  train.recover = [&](llvm::Error err) -> llvm::Expected<int64_t> {
    for (int attempt = 1;; ++attempt) {
      if (!comm.needsRecovery() || attempt > kMaxRecoveriesInARow)
        return err;
      if (opts.log)
        opts.log(llvm::formatv("trainer {0}: {1}; waiting up to {2} ms (the connect timeout) for "
                               "it to restart from its checkpoint",
                               id, llvm::toString(std::move(err)), opts.timeouts.connect.count())
                     .str());
      else
        llvm::consumeError(std::move(err));
      err = comm.reconnect(job);
      if (!err)
        if (llvm::Error e = exec.run(progs.startup, scope)) // the params of that step
          err = addContext(std::move(e), "fetching the params again");
      if (!err)
        break;
    }
    if (opts.log)
      opts.log(
          llvm::formatv("trainer {0}: every pserver is back at step {1}; going on", id, comm.step())
              .str());
    return comm.step();
  };
  if (group) {
    agreeOnSteps(*group, train);
    // Going back to a pserver checkpoint would leave the dense params, which no pserver holds,
    // at this step: a hybrid job does not recover.
    train.recover = nullptr;
  }
  auto reports = opts.evalOnly ? llvm::Expected<std::vector<StepReport>>(std::vector<StepReport>{})
                               : trainLoop(exec, progs.main, scope, train);
  if (!reports) { // let the pservers stop waiting for us, and say why
    llvm::Error err = addContext(reports.takeError(), "trainer " + std::to_string(id));
    std::string why = llvm::toString(std::move(err));
    llvm::consumeError(comm.complete(why));
    return makeError("{0}", why);
  }
  if (const RunEnv::TableTraffic &t = env.tableTraffic;
      t.ids > 0 && !reports->empty() && opts.log) {
    double steps = static_cast<double>(reports->size());
    opts.log(llvm::formatv("trainer {0}: distributed tables: {1:f0} ids a step, {2:f0} keys sent "
                           "(each once per batch): {3:f0} bytes of keys and rows a step, "
                           "{4:f0} without de-duplication",
                           id, t.ids / steps, t.keys / steps, t.bytes / steps,
                           t.bytesWithoutDedup / steps)
                 .str());
  }
  if (*mode == Mode::Geo) { // push what changed since the last sync
    env.forceGeoSync = true;
    for (const proto::Op &op : progs.main.blocks(0).ops())
      if (op.type() == "geo_sync") {
        if (llvm::Error err = exec.runOp(op, scope, "final geo_sync"))
          return err;
        // Evaluate and save the global model, not this trainer's rebased local copy.
        for (const std::string &param : opInputs(op, "Param"))
          scope.get(param) = scope.find(syncedName(param))->clone();
      }
  }
  if (id == 0 && progs.main.has_test_feed() && progs.main.test_feed().columns_size() > 0) {
    std::unique_ptr<ScoreFile> scores;
    if (!opts.testScoresPath.empty()) {
      auto outputs = servedOutputs(progs.main);
      if (!outputs)
        return outputs.takeError();
      auto opened = ScoreFile::open(opts.testScoresPath, std::move(*outputs));
      if (!opened)
        return opened.takeError();
      scores = std::move(*opened);
    }
    auto eval = evaluate(exec, progs.main, scope, progs.main.test_feed(), [&](const Scope &s) {
      if (scores)
        scores->write(s);
    });
    if (!eval)
      return eval.takeError();
    if (scores)
      if (llvm::Error err = scores->close())
        return err;
    testResult = *eval;
  }
  if (id == 0 && !opts.saveDir.empty())
    if (llvm::Error err =
            savePersistables(progs.main, scope, opts.saveDir, /*parametersOnly=*/true))
      return err;
  return comm.complete();
}

/// Removes what an earlier save of another shape left in `dir`: the blocks of pservers past
/// this job's count, and the dense files of vars this job saves in pieces (tables, sliced
/// params' optimizer state), which a reader would otherwise take. Pserver 0 does it.
static void removeStaleSaveFiles(const proto::Program &prog, llvm::StringRef dir) {
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
static llvm::Error savePserverBlocks(const proto::Program &prog, const Scope &scope,
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

llvm::Error runPserver(const NodePrograms &progs, const NodeOptions &opts) {
  const proto::Op *listen = listenOp(progs.main);
  if (!listen)
    return makeError("this program has no listen_and_serv op; is it a pserver program?");
  std::string lockJob = saveLockJob(opts.cluster.jobId, progs.main.dist().plan_digest());
  auto saveLock = lockSaveDir(opts.saveDir, lockJob);
  if (!saveLock)
    return saveLock.takeError();
  // Checkpoints too: another job's pservers would delete ours as torn or old. A restarted
  // pserver of this job shares the hold with the ones that kept running.
  auto checkpointLock = lockSaveDir(opts.checkpointDir, lockJob, "--checkpoint-dir");
  if (!checkpointLock)
    return checkpointLock.takeError();
  RunEnv env;
  env.program = &progs.main;
  env.pserver.tableBudget = opts.tableBudget;
  env.pserver.skipNonFinite = opts.skipNonFinite;
  PserverRun &run = env.pserverRun;
  run.timeouts = opts.timeouts;
  run.bind = opts.bind;
  run.heldPort = opts.heldPort;
  run.log = opts.log;
  run.jobId = opts.cluster.jobId;
  if (opts.curve.enabled() && opts.curve.allowed.empty())
    return makeError("a pserver with a CURVE key pair needs the trainers' public keys to accept "
                     "(--curve-allow FILE)");
  run.curve = opts.curve;
  if (!opts.checkpointDir.empty())
    run.checkpointDir =
        inDir(opts.checkpointDir, "pserver." + std::to_string(progs.main.dist().pserver_index()));
  run.checkpointEvery = opts.checkpointEvery;
  run.goneTrainers = opts.goneTrainers;
  run.elastic = opts.elastic;
  run.hybrid = progs.main.dist().hybrid();
  run.checkpointKeep = opts.checkpointKeep;
  // The pserver's thread budget (--num-threads) runs its optimize blocks side by side.
  run.serviceThreads = computeThreads() > 1 ? computeThreads() : 0;
  run.computeThreads = opts.computeThreads;
  // Distributed tables save into the save's tables/ directory, a part per pserver.
  if (!opts.saveDir.empty())
    run.tableSaveDir = inDir(opts.saveDir, "tables");
  run.training = !opts.evalOnly;
  run.learningRate = opts.learningRate;
  run.shouldStop = stopRequested;
  run.checkpointRequested = takeCheckpointRequest;
  Executor exec;
  exec.setEnv(&env);
  Scope scope;
  if (llvm::Error err = exec.run(progs.startup, scope))
    return addContext(std::move(err), "pserver startup");
  // --load: this pserver's blocks cut from the whole vars, then (in the loop's start) its rows
  // of every table, from a checkpoint of any layout.
  std::optional<CheckpointReader> ckpt;
  if (!opts.loadDir.empty()) {
    auto opened = CheckpointReader::open(opts.loadDir);
    if (!opened)
      return opened.takeError();
    ckpt = std::move(*opened);
    auto loaded = loadPserverBlocks(progs.main, scope, *ckpt);
    if (!loaded)
      return loaded.takeError();
    run.loadFrom = &*ckpt;
    run.loaded = std::move(*loaded);
  }
  if (llvm::Error err = exec.run(progs.main, scope, 0)) {
    if (env.trainersFailed)
      return llvm::make_error<TrainersFailedError>(llvm::toString(std::move(err)));
    return err;
  }
  if (!opts.saveDir.empty())
    return savePserverBlocks(progs.main, scope, opts.saveDir);
  return llvm::Error::success();
}

} // namespace oar::runtime
