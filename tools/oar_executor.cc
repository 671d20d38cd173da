// oar-executor: runs one node. Alone it trains on this machine; with a role (from flags, from
// Paddle's PADDLE_* variables or from TF_CONFIG) it is a trainer or a pserver of a job. Given a
// single-machine main/startup it transpiles in-process for its role, so every node runs the same
// command line; given --dir it runs the transpiled file for its role.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <thread>

#include "checkpoint/load_model.h"
#include "checkpoint/save_model.h"
#include "checkpoint/training_checkpoints.h"
#include "executor/npy.h"
#include "executor/threads.h"
#include "feed/feed_overrides.h"
#include "ops/verify.h"
#include "runtime/cluster/launcher.h"
#include "runtime/cluster/node_threads.h"
#include "runtime/cluster/scheduler.h"
#include "runtime/cluster/scheduler_client.h"
#include "runtime/collective/local_address.h"
#include "runtime/node/node.h"
#include "runtime/node/save_lock.h"
#include "runtime/pserver/pserver.h"
#include "runtime/transport/held_port.h"
#include "serving/export.h"
#include "serving/inference_program.h"
#include "serving/predict_stream.h"
#include "serving/score_file.h"
#include "support/env_names.h"
#include "support/signals.h"
#include "tools/common/bucket_flags.h"
#include "tools/common/metrics_writer.h"
#include "tools/common/progress.h"
#include "tools/tool_flags.h"
#include "tools/tool_version.h"
#include "train/best_model.h"
#include "train/learning_rate.h"
#include "train/training_loop.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using oar::Role;

static cl::OptionCategory category("oar-executor options");
static cl::opt<std::string> mainPath("main", cl::desc("main program (.pb or .pbtxt)"),
                                     cl::cat(category));
static cl::opt<std::string> startupPath("startup", cl::desc("startup program"), cl::cat(category));
static cl::opt<std::string> dir("dir", cl::desc("a directory written by oar-transpile"),
                                cl::cat(category));
static cl::opt<std::string>
    loadDir("load", cl::desc("load persistables from DIR/<var>.npy (pservers: whole params)"),
            cl::cat(category));
static cl::opt<std::string> saveDir("save", cl::desc("save persistables as DIR/<var>.npy"),
                                    cl::cat(category));
static cl::opt<std::string>
    metricsPath("metrics",
                cl::desc("write a CSV of every step's loss and metrics (and test evaluations); "
                         "trainer i of several writes FILE with .traineri before the extension"),
                cl::cat(category));
static cl::opt<std::string>
    evalEvery("eval-every",
              cl::desc("evaluate the test feed every N steps, or every `epoch` (trainer 0)"),
              cl::cat(category));
// The training toolkit's run-time flags (docs/training.md).
static cl::opt<float> learningRate("lr",
                                   cl::desc("every optimizer's base learning rate (the schedule "
                                            "starts from it), over the program's"),
                                   cl::cat(category));
static cl::opt<std::string>
    keepBest("keep-best",
             cl::desc("auc | loss | accuracy: after each --eval-every evaluation, save the best "
                      "one's params to SAVE/best (one machine, or trainer 0 of a collective job)"),
             cl::cat(category));
static cl::opt<int64_t> earlyStop("early-stop",
                                  cl::desc("stop after N --eval-every evaluations without "
                                           "improving --keep-best's metric (loss if none)"),
                                  cl::init(0), cl::cat(category));
static cl::opt<std::string>
    testScores("test-scores",
               cl::desc("write the predictions of the final test evaluation, a line per test row "
                        "(trainer 0 of a job), as oar-predict writes them"),
               cl::value_desc("FILE"), cl::cat(category));
static cl::opt<std::string> predictOut(
    "predict",
    cl::desc("one machine: skip training and write the model's predictions (with --load, a "
             "checkpoint's) for every test row, as oar-predict does"),
    cl::value_desc("FILE"), cl::cat(category));
static cl::opt<bool>
    allowNonFinite("allow-nonfinite",
                   cl::desc("train on after a NaN or inf loss instead of stopping"),
                   cl::cat(category));

static cl::OptionCategory dataCategory("data (overrides the program's feed)");
static cl::opt<std::string> data("data", cl::desc("train data files, comma separated"),
                                 cl::cat(dataCategory));
static cl::opt<std::string> testData("test-data", cl::desc("test data files, comma separated"),
                                     cl::cat(dataCategory));
static cl::opt<int64_t> epochs("epochs", cl::desc("passes over the train data"),
                               cl::cat(dataCategory));
static cl::opt<int64_t> batchSize("batch-size", cl::desc("rows per step (per trainer)"),
                                  cl::cat(dataCategory));
static cl::opt<bool>
    evalOnly("eval-only",
             cl::desc("skip training: evaluate the test feed (with --load, a checkpoint)"),
             cl::cat(category));
static cl::opt<int> numThreads(
    "num-threads",
    cl::desc("compute threads (oneDNN/OpenMP; a pserver's service threads); default: "
             "OMP_NUM_THREADS if set, else every core alone, 1 for a pserver, the cores split "
             "among trainers whose pservers are all on loopback"),
    cl::cat(category));
static cl::opt<std::string>
    device("device",
           cl::desc("where a trainer or a single-machine run computes: cpu, cuda, cuda:N "
                    "(default: the program's device, else cpu); pservers always use the CPU"),
           cl::cat(category));
static cl::opt<int64_t> logEvery("log-every", cl::desc("print every N steps (0: about 20 lines)"),
                                 cl::init(0), cl::cat(category));

static cl::OptionCategory jobCategory("distributed job (flags override PADDLE_* and TF_CONFIG)");
static cl::opt<std::string> role("role", cl::desc("trainer | pserver | scheduler"),
                                 cl::cat(jobCategory));
static cl::opt<std::string>
    scheduler("scheduler",
              cl::desc("host:port of the job's scheduler: nodes register there and get their "
                       "id and the pservers' endpoints (a scheduler serves it)"),
              cl::cat(jobCategory));
static cl::opt<int64_t> pserverId("pserver-id",
                                  cl::desc("with --scheduler: the pserver id to ask for"),
                                  cl::init(-1), cl::cat(jobCategory));
static cl::opt<int64_t> pserverCount("pserver-count",
                                     cl::desc("with --scheduler: the number of pservers"),
                                     cl::init(0), cl::cat(jobCategory));
static cl::opt<bool>
    elastic("elastic",
            cl::desc("async: trainers may join the running job through the scheduler (give it "
                     "to the scheduler and the pservers) and leave it by completing"),
            cl::cat(jobCategory));
static cl::opt<int64_t>
    maxTrainers("max-trainers",
                cl::desc("scheduler, with --elastic: the most trainers running at once (default "
                         "64); joins beyond are refused"),
                cl::init(64), cl::cat(jobCategory));
static const std::string registerTimeoutHelp =
    llvm::formatv("with --scheduler: every node registering (default {0})",
                  oar::runtime::kDefaultRegisterTimeout.count());
static cl::opt<int64_t> registerTimeoutMs("register-timeout-ms", cl::desc(registerTimeoutHelp),
                                          cl::init(oar::runtime::kDefaultRegisterTimeout.count()),
                                          cl::cat(jobCategory));
static const std::string heartbeatTimeoutHelp = llvm::formatv(
    "scheduler: a node silent this long is gone (heartbeats every {0} ms; at least {1}; default "
    "{2})",
    oar::runtime::kHeartbeatEvery.count(), oar::runtime::kMinHeartbeatTimeout.count(),
    oar::runtime::kDefaultHeartbeatTimeout.count());
static cl::opt<int64_t> heartbeatTimeoutMs("heartbeat-timeout-ms", cl::desc(heartbeatTimeoutHelp),
                                           cl::init(oar::runtime::kDefaultHeartbeatTimeout.count()),
                                           cl::cat(jobCategory));
static cl::opt<int64_t> trainerId("trainer-id", cl::desc("this trainer's id"), cl::init(0),
                                  cl::cat(jobCategory));
static cl::opt<int64_t> trainers("trainers", cl::desc("number of trainers"), cl::init(1),
                                 cl::cat(jobCategory));
static cl::opt<std::string> pservers("pservers", cl::desc("pserver endpoints host:port,..."),
                                     cl::cat(jobCategory));
static cl::opt<std::string>
    endpoint("endpoint",
             cl::desc("this pserver's advertised host:port (a collective trainer's: the host its "
                      "pairs listen on)"),
             cl::cat(jobCategory));
static cl::opt<std::string> rendezvous(
    "rendezvous",
    cl::desc("collective jobs: host:port where trainer 0 serves the trainers' rendezvous "
             "(default: the first of PADDLE_TRAINER_ENDPOINTS, or TF_CONFIG's chief)"),
    cl::cat(jobCategory));
static cl::opt<std::string> bind("bind", cl::desc("this pserver's bind address, e.g. 0.0.0.0:6170"),
                                 cl::cat(jobCategory));
static cl::opt<int> collectiveStreams(
    "collective-streams",
    cl::desc("collective and hybrid jobs: TCP connections between each pair of trainers; an "
             "all-reduce of 4 MiB or more is split among them (1 to 8)"),
    cl::init(1), cl::cat(jobCategory));
static oar::BucketFlags buckets(jobCategory);
static cl::opt<std::string> hybridTables(
    "hybrid-tables",
    cl::desc("--mode hybrid: the distributed tables train sync (at each step's barrier, the "
             "default) or async (applied on arrival)"),
    cl::cat(jobCategory));
static cl::opt<std::string> mode("mode", cl::desc("sync | async | geo | collective | hybrid"),
                                 cl::init("sync"), cl::cat(jobCategory));
static cl::opt<int64_t> geoKSteps("geo-k-steps", cl::desc("GEO: steps between syncs"),
                                  cl::init(100), cl::cat(jobCategory));
static cl::opt<bool> sliceVarUp("slice-var-up", cl::desc("cut big params into blocks"),
                                cl::init(true), cl::cat(jobCategory));
static cl::opt<int64_t> minBlockSize("min-block-size", cl::desc("smallest block, in elements"),
                                     cl::init(8192), cl::cat(jobCategory));
static cl::opt<std::string> splitMethod("split-method", cl::desc("round_robin | hash_name"),
                                        cl::init("round_robin"), cl::cat(jobCategory));
static const oar::runtime::Timeouts kDefaultTimeouts;
static cl::opt<int64_t> connectTimeoutMs("connect-timeout-ms", cl::desc("reaching a pserver"),
                                         cl::init(kDefaultTimeouts.connect.count()),
                                         cl::cat(jobCategory));
static cl::opt<int64_t> replyTimeoutMs("reply-timeout-ms", cl::desc("a pserver's reply"),
                                       cl::init(kDefaultTimeouts.reply.count()),
                                       cl::cat(jobCategory));
static cl::opt<int64_t> barrierTimeoutMs("barrier-timeout-ms",
                                         cl::desc("a pserver waiting for slow trainers"),
                                         cl::init(kDefaultTimeouts.barrier.count()),
                                         cl::cat(jobCategory));
static cl::opt<int64_t> idleTimeoutMs("idle-timeout-ms",
                                      cl::desc("a pserver hearing from no trainer"),
                                      cl::init(kDefaultTimeouts.idle.count()),
                                      cl::cat(jobCategory));

static cl::opt<std::string>
    checkpointDir("checkpoint-dir",
                  cl::desc("write checkpoints to DIR (one machine: DIR/step-<N>/; pservers: "
                           "DIR/pserver.<i>/) and resume from the newest when started again"),
                  cl::value_desc("DIR"), cl::cat(jobCategory));
static cl::opt<int64_t>
    checkpointEvery("checkpoint-every",
                    cl::desc("steps between checkpoints (default 100; 0: only on "
                             "request, kill -USR1 PID)"),
                    cl::init(100), cl::cat(jobCategory));
static cl::opt<int> checkpointKeep("checkpoint-keep",
                                   cl::desc("checkpoints kept, newest first (default 3, least 2)"),
                                   cl::init(3), cl::cat(jobCategory));
static cl::opt<int64_t> tableMemoryMb(
    "table-memory-mb",
    cl::desc("pservers: the most memory their distributed tables' rows and admission counters "
             "may hold, in MiB (default 0: no limit)"),
    cl::init(0), cl::cat(jobCategory));
static cl::opt<std::string> nonfiniteGrads(
    "nonfinite-grads",
    cl::desc("pservers: a gradient or table rows holding NaN or inf: refuse (the trainer hears "
             "why and a sync job ends; the default) | skip (that update is not applied for that "
             "step; the log counts the skips)"),
    cl::init("refuse"), cl::cat(jobCategory));
static cl::opt<std::string>
    tableFull("table-full",
              cl::desc("pservers: what a full table does with a new key: evict (the least "
                       "recently pushed rows, default) | refuse (no row; its pushes are dropped "
                       "and counted)"),
              cl::init("evict"), cl::cat(jobCategory));
static cl::OptionCategory
    keyCategory("CURVE keys (oar-keygen writes them; oar-launch makes its own)");
static cl::opt<std::string> curveSecret("curve-secret",
                                        cl::desc("this node's key pair (NAME.key from oar-keygen)"),
                                        cl::value_desc("FILE"), cl::cat(keyCategory));
static cl::opt<std::string>
    curveServerKey("curve-server-key",
                   cl::desc("trainers: the pservers' public key (their NAME.pub)"),
                   cl::value_desc("FILE"), cl::cat(keyCategory));
static cl::opt<std::string> curveAllow(
    "curve-allow",
    cl::desc("pservers: the trainers' public keys to accept (.pub files joined, or one per line)"),
    cl::value_desc("FILE"), cl::cat(keyCategory));

static ExitOnError exitOnErr("oar-executor: error: ");

/// The CURVE setup the --curve-* flags give (empty without --curve-secret).
static oar::runtime::CurveConfig curveFromFlags() {
  oar::runtime::CurveConfig curve;
  if (curveSecret.empty()) {
    if (!curveServerKey.empty() || !curveAllow.empty())
      exitOnErr(oar::makeError("--curve-server-key and --curve-allow need --curve-secret (this "
                               "node's own key pair)"));
    return curve;
  }
  curve.own = exitOnErr(oar::runtime::readCurveSecretFile(curveSecret));
  if (!curveServerKey.empty()) {
    auto keys = exitOnErr(oar::runtime::readCurvePublicKeys(curveServerKey));
    if (keys.size() != 1)
      exitOnErr(oar::makeError("{0}: holds {1} public keys; the pservers share one key pair",
                               curveServerKey, keys.size()));
    curve.serverKey = *keys.begin();
  }
  if (!curveAllow.empty())
    curve.allowed = exitOnErr(oar::runtime::readCurvePublicKeys(curveAllow));
  return curve;
}

static void printEval(const oar::EvalResult &eval) {
  outs() << formatv("test: {0} rows, loss {1:f6}", eval.rows, eval.loss);
  for (const auto &[name, value] : eval.metrics)
    outs() << formatv(", {0} {1:f6}", name, value);
  outs() << "\n";
}

/// The --data, --test-data, --epochs and --batch-size given, if any.
static oar::FeedOverrides feedOverrides() {
  oar::FeedOverrides o;
  o.data = oar::splitFileList(data);
  o.testData = oar::splitFileList(testData);
  if (epochs.getNumOccurrences())
    o.epochs = epochs;
  if (batchSize.getNumOccurrences())
    o.batchSize = batchSize;
  return o;
}

/// --eval-every as TrainOptions fields.
static void setEvalEvery(oar::TrainOptions &opts) {
  opts.stopOnNonFinite = !allowNonFinite;
  if (evalEvery.empty())
    return;
  if (evalEvery == "epoch")
    opts.evalEveryEpoch = true;
  else if (StringRef(evalEvery).getAsInteger(10, opts.evalEverySteps) || opts.evalEverySteps <= 0)
    exitOnErr(
        oar::makeError("--eval-every \"{0}\" must be a positive step count or epoch", evalEvery));
}

/// The --keep-best and --early-stop setup of a trainer holding the whole model (one machine, or
/// a collective trainer: `saves` on trainer 0 only); nullopt without those flags.
static std::optional<oar::BestModel> bestModelFromFlags(const oar::proto::Program &main,
                                                        bool saves) {
  if (keepBest.empty() && earlyStop == 0)
    return std::nullopt;
  if (evalEvery.empty())
    exitOnErr(oar::makeError("--keep-best and --early-stop act on evaluations: give --eval-every "
                             "(epoch or N steps) and a test feed"));
  oar::BestModelOptions o;
  o.metric = keepBest, o.patience = earlyStop;
  if (!keepBest.empty()) {
    if (saveDir.empty())
      exitOnErr(oar::makeError("--keep-best saves the best evaluation next to --save's model "
                               "(in SAVE/best): give --save DIR"));
    o.saveDir = saveDir + "/best";
    if (saves)
      o.save = [&main, dir = o.saveDir](const oar::Scope &s) {
        return oar::saveSingleMachine(main, s, dir);
      };
  }
  return exitOnErr(oar::BestModel::create(main, o));
}

/// What every training node shows: progress, the metrics file, evaluations and a summary.
class StepOutput {
public:
  StepOutput(const oar::proto::Program &main, int64_t trainerId, int64_t trainers)
      : progress_(outs(), "", logEvery) {
    if (!metricsPath.empty()) {
      std::vector<std::string> names(main.metrics().begin(), main.metrics().end());
      metrics_ = exitOnErr(
          oar::MetricsWriter::open(oar::metricsPathFor(metricsPath, trainerId, trainers), names));
    }
  }
  std::function<void(const oar::StepReport &)> callback() {
    return [this](const oar::StepReport &r) {
      progress_.update(r);
      if (metrics_)
        metrics_->writeStep(r);
      if (steps_++ == 0) {
        firstLoss_ = r.loss;
        start_ = std::chrono::steady_clock::now();
      }
      lastLoss_ = r.loss;
      rowsAfterFirst_ += steps_ > 1 ? r.rows : 0;
    };
  }
  std::function<void(const oar::StepReport &, const oar::EvalResult &)> evalCallback() {
    return [this](const oar::StepReport &r, const oar::EvalResult &eval) {
      outs() << formatv("after step {0}: ", r.step);
      printEval(eval);
      if (metrics_)
        metrics_->writeEval(r, eval);
    };
  }
  /// Ends the progress display and prints "<who>trained N steps: first loss .., last loss ..
  /// (R samples/s)", the rate over the steps after the first (which warms caches and
  /// connections).
  void summary(const std::string &who) {
    progress_.finish();
    if (steps_ == 0)
      return;
    outs() << formatv("{0}trained {1} steps: first loss {2:f6}, last loss {3:f6}", who, steps_,
                      firstLoss_, lastLoss_);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (steps_ > 1 && secs > 0)
      outs() << formatv(" ({0:f0} samples/s)", rowsAfterFirst_ / secs);
    outs() << "\n";
  }

private:
  oar::ProgressPrinter progress_;
  std::unique_ptr<oar::MetricsWriter> metrics_;
  int64_t steps_ = 0, rowsAfterFirst_ = 0;
  double firstLoss_ = 0, lastLoss_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// Single machine: startup, optional --load, train, test, optional --save.
static void logLine(const std::string &line) { errs() << line << "\n"; }

/// The scheduler link for the node's life; its destructor (at exit on an error too) tells the
/// scheduler this node ended.
static std::unique_ptr<oar::runtime::SchedulerLink> schedulerLink;
static std::atomic<int> schedulerStatus{0};

/// The listening socket oar-launch picked for this node's port and handed over (OAR_LISTEN_FD),
/// or one held while joining a scheduler: the server takes it over instead of binding again.
static std::shared_ptr<oar::runtime::HeldPort> heldPort;

static oar::runtime::SchedulerOptions schedulerOptions(const oar::runtime::ClusterSpec &c) {
  oar::runtime::SchedulerOptions s;
  if (c.role == Role::Scheduler) // not MPI rank 0's thread: the port is its pserver's
    s.heldPort = heldPort;
  s.endpoint = !c.scheduler.empty() ? c.scheduler : c.currentEndpoint;
  s.bind = bind;
  s.pservers = c.pserverCount;
  s.trainers = c.trainers;
  s.jobId = c.jobId;
  s.registerTimeout = std::chrono::milliseconds(registerTimeoutMs);
  s.heartbeatTimeout = std::chrono::milliseconds(heartbeatTimeoutMs);
  s.curve = curveFromFlags();
  s.elastic = elastic;
  s.maxTrainers = maxTrainers;
  s.log = logLine;
  s.shouldStop = oar::runtime::stopRequested;
  return s;
}

static int runSchedulerRole(const oar::runtime::ClusterSpec &c) {
  if (c.scheduler.empty() && c.currentEndpoint.empty())
    exitOnErr(oar::makeError("a scheduler needs the address to serve: --scheduler HOST:PORT"));
  exitOnErr(oar::runtime::runScheduler(schedulerOptions(c)));
  return 0;
}

static std::thread startSchedulerThread(const oar::runtime::ClusterSpec &c) {
  return std::thread([s = schedulerOptions(c)] {
    if (Error err = oar::runtime::runScheduler(s)) {
      errs() << "oar-executor: error: " << toString(std::move(err)) << "\n";
      schedulerStatus = 1;
    }
  });
}

/// The device this process computes on: --device, else the program's, else the CPU; checked
/// usable here (built with CUDA, a GPU of that index visible).
static oar::Place computePlace(const oar::proto::Program &main, llvm::StringRef what) {
  std::string text = device.getNumOccurrences() ? device.getValue() : main.device();
  if (text.empty())
    text = "cpu";
  oar::Place place = exitOnErr(
      oar::parsePlace(text, device.getNumOccurrences() ? llvm::StringRef("--device") : what));
  exitOnErr(oar::usePlace(place));
  return place;
}

/// The test evaluation, writing its predictions to --test-scores when given.
static oar::EvalResult evaluateWithScores(oar::Executor &exec, const oar::proto::Program &main,
                                          oar::Scope &scope) {
  if (testScores.empty())
    return exitOnErr(oar::evaluate(exec, main, scope, main.test_feed()));
  auto scores = exitOnErr(oar::ScoreFile::open(testScores, exitOnErr(oar::servedOutputs(main))));
  auto eval = exitOnErr(oar::evaluate(exec, main, scope, main.test_feed(),
                                      [&](const oar::Scope &s) { scores->write(s); }));
  exitOnErr(scores->close());
  return eval;
}

/// --predict: the model in `scope` (loaded) exported in memory, its predictions of the test rows.
static int predictSingle(const oar::proto::Program &main, const oar::proto::Program &startup,
                         oar::Scope &scope) {
  if (loadDir.empty())
    exitOnErr(oar::makeError("--predict needs --load DIR: the trained values to predict with"));
  if (main.test_feed().columns_size() == 0)
    exitOnErr(oar::makeError("{0} has no test feed to predict (give --test-data)", mainPath));
  oar::CheckpointReader ckpt = exitOnErr(oar::CheckpointReader::open(loadDir));
  auto model = exitOnErr(oar::exportModel(main, startup, ckpt, {}));
  // The checkpoint's own scores, to the bit: every layer on the GEMM, as training ran it.
  oar::PredictorOptions options;
  options.sparseInputs = false;
  auto predictor = exitOnErr(oar::Predictor::fromExport(std::move(model), options));
  std::error_code ec;
  raw_fd_ostream os(predictOut, ec);
  if (ec)
    exitOnErr(oar::makeError("{0}: cannot write: {1}", predictOut, ec.message()));
  int64_t rows = exitOnErr(oar::predictFeed(*predictor, predictor->program().test_feed(), os, 1));
  os.close();
  if (os.has_error())
    exitOnErr(oar::makeError("{0}: write failed: {1}", predictOut, os.error().message()));
  outs() << "predicted " << rows << " rows into " << predictOut << "\n";
  return 0;
}

static int runSingle() {
  if (mainPath.empty() || startupPath.empty())
    exitOnErr(oar::makeError("--main and --startup are required"));
  if (!checkpointDir.empty() && (evalOnly || !predictOut.empty()))
    exitOnErr(oar::makeError("--checkpoint-dir checkpoints training; --{0} trains nothing",
                             evalOnly ? "eval-only" : "predict"));
  if (!checkpointDir.empty() && checkpointEvery < 0)
    exitOnErr(oar::makeError("--checkpoint-every {0} must be 0 (only the last step) or more",
                             checkpointEvery));
  oar::proto::Program mainProg = exitOnErr(oar::loadVerifiedProgram(mainPath));
  exitOnErr(oar::applyFeedOverrides(mainProg, feedOverrides(), mainPath));
  oar::proto::Program startupProg = exitOnErr(oar::loadVerifiedProgram(startupPath));
  if (!mainProg.dist().role().empty())
    exitOnErr(oar::makeError("{0} is a {1} program of a distributed job; run it with --role or "
                             "through oar-launch",
                             mainPath, mainProg.dist().role()));
  // Held until the run ends, so no other job saves into the directory meanwhile.
  std::string lockJob = oar::runtime::saveLockJob("", "");
  auto saveLock = exitOnErr(oar::runtime::lockSaveDir(saveDir, lockJob));
  auto checkpointLock =
      exitOnErr(oar::runtime::lockSaveDir(checkpointDir, lockJob, "--checkpoint-dir"));
  oar::Executor exec(computePlace(mainProg, mainPath).device);
  oar::Scope scope;
  exitOnErr(exec.run(startupProg, scope));
  if (!loadDir.empty()) {
    oar::CheckpointReader ckpt = exitOnErr(oar::CheckpointReader::open(loadDir));
    oar::LoadReport loaded = exitOnErr(oar::loadSingleMachine(mainProg, startupProg, scope, ckpt));
    bool training = !evalOnly && predictOut.empty();
    exitOnErr(oar::checkStateComplete(loaded, ckpt, training));
    outs() << loaded.summary(ckpt, training) << "\n";
  }
  std::optional<oar::BestModel> best = bestModelFromFlags(mainProg, /*saves=*/true);
  if (!predictOut.empty())
    return predictSingle(mainProg, startupProg, scope);
  if (evalOnly) {
    if (!mainProg.has_test_feed() || mainProg.test_feed().columns_size() == 0)
      exitOnErr(oar::makeError("{0} has no test feed to evaluate", mainPath));
    printEval(evaluateWithScores(exec, mainProg, scope));
    return 0;
  }
  StepOutput output(mainProg, 0, 1);
  oar::TrainOptions opts;
  opts.shouldStop = oar::runtime::stopRequested;
  opts.onStep = output.callback();
  opts.onEval = output.evalCallback();
  setEvalEvery(opts);
  if (best)
    opts.afterEval = best->callback(mainProg);
  std::optional<oar::TrainingCheckpoints> checkpoints;
  if (!checkpointDir.empty()) {
    checkpoints.emplace(checkpointDir, mainProg, startupProg, checkpointEvery, checkpointKeep);
    opts.startStep = exitOnErr(checkpoints->resume(scope, logLine)); // over --load, if any
    opts.afterStep = [&](const oar::StepReport &r, const oar::Scope &s) {
      return checkpoints->afterStep(r, s);
    };
  }
  if (learningRate.getNumOccurrences()) // over the program's and any loaded checkpoint's
    exitOnErr(oar::setLearningRate(mainProg, scope, learningRate));
  auto reports = exitOnErr(oar::trainLoop(exec, mainProg, scope, opts));
  if (checkpoints)
    exitOnErr(checkpoints->finish(reports, scope));
  output.summary("");
  if (best && !best->summary().empty())
    outs() << best->summary() << "\n";
  if (mainProg.has_test_feed() && mainProg.test_feed().columns_size() > 0)
    printEval(evaluateWithScores(exec, mainProg, scope));
  if (!saveDir.empty()) {
    exitOnErr(oar::saveSingleMachine(mainProg, scope, saveDir));
    outs() << "saved persistables to " << saveDir << "\n";
  }
  return 0;
}

/// A collective trainer's rendezvous (--rendezvous, else trainer 0's endpoint) and the host its
/// Gloo pairs listen on (its own endpoint's; on one host, loopback).
static Error placeCollectiveTrainer(oar::runtime::NodeOptions &opts) {
  const oar::runtime::ClusterSpec &c = opts.cluster;
  opts.rendezvous = rendezvous.getNumOccurrences() ? rendezvous.getValue()
                    : c.trainerEndpoints.empty()   ? std::string()
                                                   : c.trainerEndpoints.front();
  if (opts.rendezvous.empty())
    return oar::makeError("trainer {0}: a collective trainer needs trainer 0's address: "
                          "--rendezvous HOST:PORT, PADDLE_TRAINER_ENDPOINTS or TF_CONFIG",
                          c.trainerId);
  std::string own = c.currentEndpoint;
  if (own.empty() && c.trainerId >= 0 && size_t(c.trainerId) < c.trainerEndpoints.size())
    own = c.trainerEndpoints[c.trainerId];
  std::string host = llvm::StringRef(own).rsplit(':').first.str();
  if (own.empty()) { // OAR_NODE_HOST, else the address this host reaches trainer 0's from
    const char *given = std::getenv(oar::env::kOarNodeHost);
    if (given && *given)
      host = given;
    else if (Error err = oar::runtime::localAddressToward(
                             llvm::StringRef(opts.rendezvous).rsplit(':').first.str())
                             .moveInto(host))
      return oar::makeError("trainer {0}: {1}; give its own address (--endpoint, "
                            "PADDLE_CURRENT_ENDPOINT or OAR_NODE_HOST)",
                            c.trainerId, toString(std::move(err)));
  }
  opts.collectiveStreams = collectiveStreams;
  // The trainer's thread may be blocked in Gloo for the whole timeout: the process ends here,
  // naming the rank, as the failed collective would have.
  opts.onCollectiveStuck = [id = c.trainerId](const std::string &what) {
    errs() << "oar-executor: error: trainer " << id << ": " << what << "\n";
    errs().flush();
    outs().flush();
    std::_Exit(1);
  };
  opts.collectiveHost = host;
  return Error::success();
}

/// This node's part of the job, once its role and endpoints are known.
static int runNode(oar::runtime::NodeOptions &opts) {
  oar::runtime::ClusterSpec &c = opts.cluster;
  if (dir.empty() && (mainPath.empty() || startupPath.empty()))
    exitOnErr(oar::makeError("give --dir (transpiled) or --main and --startup (single-machine)"));

  exitOnErr(oar::setModeFromFlags(opts.config, mode, hybridTables));
  if (opts.config.mode == oar::Mode::Collective && c.role != Role::Trainer)
    exitOnErr(oar::makeError("--mode collective: every node is a trainer (no pservers, no "
                             "scheduler); this one is a {0}",
                             oar::roleName(c.role)));
  opts.config.geoKSteps = geoKSteps, opts.config.sliceVarUp = sliceVarUp;
  opts.config.minBlockSize = minBlockSize, opts.config.splitMethod = splitMethod;
  exitOnErr(buckets.apply(opts.config));
  opts.timeouts.connect = std::chrono::milliseconds(connectTimeoutMs);
  opts.timeouts.reply = std::chrono::milliseconds(replyTimeoutMs);
  opts.timeouts.barrier = std::chrono::milliseconds(barrierTimeoutMs);
  opts.timeouts.idle = std::chrono::milliseconds(idleTimeoutMs);
  opts.heldPort = heldPort;
  opts.bind = bind, opts.loadDir = loadDir, opts.saveDir = saveDir, opts.metricsPath = metricsPath;
  opts.evalOnly = evalOnly;
  opts.testScoresPath = testScores;
  if (!predictOut.empty())
    exitOnErr(oar::makeError("--predict runs on one machine: give it --main, --startup and "
                             "--load without a role (or export the job's save with oar-export)"));
  opts.curve = curveFromFlags();
  if (!checkpointDir.empty() && checkpointEvery < 0)
    exitOnErr(oar::makeError("--checkpoint-every {0} must be 0 (on request only) or more",
                             checkpointEvery));
  opts.checkpointDir = checkpointDir, opts.checkpointEvery = checkpointEvery;
  opts.checkpointKeep = checkpointKeep;
  if (tableMemoryMb < 0 || tableMemoryMb > (int64_t(1) << 30))
    exitOnErr(oar::makeError("--table-memory-mb {0} must be 0 (no limit) to 2^30", tableMemoryMb));
  if (tableFull != "evict" && tableFull != "refuse")
    exitOnErr(oar::makeError("--table-full={0}: expected evict or refuse", tableFull));
  if (nonfiniteGrads != "refuse" && nonfiniteGrads != "skip")
    exitOnErr(oar::makeError("--nonfinite-grads={0}: expected refuse or skip", nonfiniteGrads));
  opts.skipNonFinite = nonfiniteGrads == "skip";
  opts.tableBudget.bytes = tableMemoryMb << 20;
  opts.tableBudget.whenFull =
      tableFull == "evict" ? oar::runtime::TableFull::Evict : oar::runtime::TableFull::Refuse;
  opts.log = logLine;
  opts.elastic = elastic;
  if (learningRate.getNumOccurrences())
    opts.learningRate = learningRate;
  if (elastic && opts.config.hybrid)
    exitOnErr(oar::makeError("--elastic is for async PS jobs; a hybrid job's trainers all-reduce "
                             "among a fixed group"));
  if (elastic && opts.config.mode != oar::Mode::Async)
    exitOnErr(oar::makeError("--elastic is for async jobs (trainers join and leave while the "
                             "others train); this one runs {0}",
                             oar::modeName(opts.config.mode)));
  if (schedulerLink)
    opts.goneTrainers = [] { return schedulerLink->goneTrainers(); };
  auto progs = exitOnErr(oar::runtime::nodePrograms(opts, dir, mainPath, startupPath));
  // Collective and hybrid trainers meet the other trainers.
  bool meetsTrainers = progs.main.dist().hybrid() ||
                       progs.main.dist().mode() == oar::modeName(oar::Mode::Collective);
  if (c.role == Role::Trainer && meetsTrainers)
    exitOnErr(placeCollectiveTrainer(opts));

  // Errors are printed here (not by exitOnErr) so the scheduler hears why this node failed.
  auto fail = [](Error err, int status) {
    std::string why = toString(std::move(err));
    errs() << "oar-executor: error: " << why << "\n";
    if (schedulerLink)
      schedulerLink->leave(why);
    return status;
  };
  if (c.role == Role::Pserver) {
    if (Error err = oar::runtime::runPserver(progs, opts)) {
      // Failing because a trainer failed gets its own status, so a launcher names the trainer.
      bool consequence = err.isA<oar::runtime::TrainersFailedError>();
      return fail(std::move(err), consequence ? oar::runtime::kExitOtherNodeFailed : 1);
    }
    return 0;
  }
  exitOnErr(oar::applyFeedOverrides(progs.main, feedOverrides(),
                                    formatv("trainer {0}'s program", c.trainerId).str()));
  opts.place = computePlace(progs.main, formatv("trainer {0}'s program", c.trainerId).str());
  StepOutput output(progs.main, c.trainerId, c.trainers);
  opts.onStep = output.callback();
  setEvalEvery(opts.train);
  opts.train.onEval = output.evalCallback();
  // Only a collective trainer holds the whole model: trainer 0 evaluates, keeps the best and
  // decides when to stop; the others follow.
  bool collective = progs.main.dist().mode() == oar::modeName(oar::Mode::Collective);
  if ((!keepBest.empty() || earlyStop > 0) && !collective)
    exitOnErr(oar::makeError("--keep-best and --early-stop need the whole model on a trainer: "
                             "one machine or --mode collective (this {0} job's params are on "
                             "its pservers)",
                             progs.main.dist().mode()));
  std::optional<oar::BestModel> best = bestModelFromFlags(progs.main, c.trainerId == 0);
  if (best && c.trainerId == 0)
    opts.train.afterEval = best->callback(progs.main);
  opts.earlyStop = earlyStop > 0;
  std::optional<oar::EvalResult> eval;
  if (Error err = oar::runtime::runTrainer(progs, opts, eval))
    return fail(std::move(err), 1);
  output.summary(formatv("trainer {0}: ", c.trainerId).str());
  if (best && c.trainerId == 0 && !best->summary().empty())
    outs() << best->summary() << "\n";
  if (eval)
    printEval(*eval);
  if (!saveDir.empty() && c.trainerId == 0)
    outs() << "saved parameters to " << saveDir << "\n";
  return 0;
}

int main(int argc, char **argv) {
  oar::setToolVersion("oar-executor");
  // kill -USR1 asks a checkpointing pserver for a checkpoint; caught from the start, so that a
  // signal sent while the node starts cannot end it (others ignore it).
  exitOnErr(oar::runtime::installCheckpointHandler());
  cl::HideUnrelatedOptions({&category, &dataCategory, &jobCategory, &keyCategory});
  oar::parseToolFlags(argc, argv, "oar-executor", "oar-executor: run one node of oar training\n");
  // Until its loops poll for a stop, a node ends at SIGTERM (see installStopHandlers).
  exitOnErr(oar::runtime::installStopHandlers(oar::runtime::BeforeFirstPoll::End));
  if (auto handed = exitOnErr(oar::runtime::takeHandedOverPort()); handed.held())
    heldPort = std::make_shared<oar::runtime::HeldPort>(std::move(handed));
  oar::runtime::NodeOptions opts;
  opts.cluster = exitOnErr(oar::runtime::clusterFromEnv([](const char *n) { return getenv(n); }));
  oar::runtime::ClusterSpec &c = opts.cluster;
  if (role.getNumOccurrences()) {
    auto parsed = oar::parseRole(role); // "" (Role::None): one machine, as before a role
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      exitOnErr(oar::makeError("--role \"{0}\" must be trainer, pserver or scheduler", role));
    }
    c.role = *parsed;
  }
  if (trainerId.getNumOccurrences())
    c.trainerId = trainerId;
  if (trainers.getNumOccurrences() || c.trainers == 0)
    c.trainers = trainers;
  if (pservers.getNumOccurrences())
    c.pservers = oar::splitEndpoints(pservers);
  if (endpoint.getNumOccurrences())
    c.currentEndpoint = endpoint;
  if (scheduler.getNumOccurrences())
    c.scheduler = scheduler;
  if (pserverCount.getNumOccurrences())
    c.pserverCount = pserverCount;
  if (!c.scheduler.empty() && c.role == Role::Trainer && trainerId.getNumOccurrences())
    c.askedId = trainerId;
  if (!c.scheduler.empty() && c.role == Role::Pserver && pserverId.getNumOccurrences())
    c.askedId = pserverId;
  // A collective job's ranks all train; a PS job's first --pserver-count ranks serve.
  bool collective = mode == oar::modeName(oar::Mode::Collective);
  if (c.mpiRank >= 0 || oar::runtime::useSlurmRank(c, collective)) {
    if (collective)
      oar::runtime::placeCollectiveRank(c);
    else
      exitOnErr(oar::runtime::placeMpiRank(c));
  }
  if (numThreads.getNumOccurrences() && (numThreads < 1 || numThreads > oar::kMaxComputeThreads))
    exitOnErr(oar::makeError("--num-threads {0} must be from 1 to {1}", numThreads,
                             oar::kMaxComputeThreads));
  // Set by hand (the flag, else OMP_NUM_THREADS, as OpenMP programs read it), else the default.
  std::optional<int> handThreads;
  if (numThreads.getNumOccurrences())
    handThreads = numThreads;
  else if (c.role != Role::Scheduler) // the scheduler computes nothing
    handThreads = exitOnErr(oar::ompNumThreads(std::getenv(oar::env::kOmpNumThreads)));
  if (c.role == Role::Scheduler)
    return runSchedulerRole(c);
  std::thread schedulerThread; // MPI rank 0 serves the scheduler beside its own role
  if (c.runsScheduler)
    schedulerThread = startSchedulerThread(c);
  c.trainersMeet = collective || mode == "hybrid";
  if (!c.scheduler.empty() && c.role != Role::None)
    schedulerLink = exitOnErr(oar::runtime::joinThroughScheduler(
        c, curveFromFlags(), std::chrono::milliseconds(registerTimeoutMs), logLine,
        oar::runtime::stopRequested, heldPort));
  oar::setComputeThreads(
      handThreads.value_or(oar::defaultNodeThreads(c.role, c.trainers, c.pservers)));
  if (c.role == Role::None)
    return runSingle();
  // Which budget the node got, and from where, for its first lines: a launch's default and a
  // hand setting that lead to the same budget then read alike (bench/dist_mlp.sh compares so).
  std::string defaultFor = "the default for a " + oar::roleName(c.role).str();
  opts.computeThreads = oar::describeComputeThreads(numThreads.getNumOccurrences() ? "--num-threads"
                                                    : handThreads ? oar::env::kOmpNumThreads
                                                                  : defaultFor);
  int status = runNode(opts);
  if (schedulerLink)
    schedulerLink->leave(status == 0 ? "" : "it failed (see its log)"); // no-op after fail()
  if (schedulerThread.joinable())
    schedulerThread.join();
  return status == 0 ? schedulerStatus.load() : status;
}
