// Every flag of a node, declared once.
#include "runtime/node/node_options.h"

#include "executor/threads.h"
#include "support/option_table.h"
#include "llvm/Support/FormatVariadic.h"

namespace oar::runtime {

void TrainerOptions::declare(OptionTable &t) {
  t.add("metrics", metricsPath, "FILE",
        "write a CSV of every step's loss and metrics (and test evaluations); trainer i of "
        "several writes FILE with .traineri before the extension");
  t.add("eval-every", evalEvery, "N|epoch",
        "evaluate the test feed every N steps, or every `epoch` (trainer 0)");
  t.add("keep-best", keepBest, "METRIC",
        "auc | loss | accuracy: after each --eval-every evaluation, save the best one's params "
        "to SAVE/best (trainer 0; in a PS or hybrid job the pservers, given --keep-best and "
        "--save too, write the tables' rows there)");
  t.add("early-stop", earlyStop,
        "stop after N --eval-every evaluations without improving --keep-best's metric (loss if "
        "none); trainer 0 decides and every trainer stops",
        0);
  t.add("test-scores", testScoresPath, "FILE",
        "write the predictions of the final test evaluation, a line per test row (trainer 0 of a "
        "job), as oar-predict writes them");
  t.add("predict", predictPath, "FILE",
        "one machine: skip training and write the model's predictions (with --load, a "
        "checkpoint's) for every test row, as oar-predict does");
  t.add("allow-nonfinite", allowNonFinite, "train on after a NaN or inf loss instead of stopping");
  t.add("device", device, "DEVICE",
        "where a trainer or a single-machine run computes: cpu, cuda, cuda:N (default: the "
        "program's device, else cpu); pservers always use the CPU");
  t.add("log-every", logEvery, "print every N steps (0: about 20 lines)", 0);
  t.add("collective-streams", collectiveStreams,
        "collective and hybrid jobs: TCP connections between each pair of trainers; an "
        "all-reduce of 4 MiB or more is split among them",
        1, 8);
  t.group("data (overrides the program's feed)");
  t.custom("data", "FILES", "train data files, comma separated", "", [this](llvm::StringRef v) {
    feed.data = splitFileList(v);
    return llvm::Error::success();
  });
  t.custom("test-data", "FILES", "test data files, comma separated", "", [this](llvm::StringRef v) {
    feed.testData = splitFileList(v);
    return llvm::Error::success();
  });
  t.add("epochs", feed.epochs, "passes over the train data");
  t.add("batch-size", feed.batchSize, "rows per step (per trainer)");
}

void NodePlace::declare(OptionTable &t) {
  t.add("role", role, "ROLE", "trainer | pserver | scheduler");
  t.add("scheduler", scheduler, "HOST:PORT",
        "the job's scheduler: nodes register there and get their id and the pservers' endpoints "
        "(a scheduler serves it)");
  t.add("pserver-id", pserverId, "with --scheduler: the pserver id to ask for");
  t.add("pserver-count", pserverCount, "with --scheduler: the number of pservers");
  t.add("elastic", elastic,
        "async: trainers may join the running job through the scheduler (give it to the "
        "scheduler and the pservers) and leave it by completing");
  t.add("register-timeout-ms", registerTimeout, "with --scheduler: every node registering");
  t.add("trainer-id", trainerId, "this trainer's id (default 0)");
  t.add("trainers", trainers, "number of trainers (default 1)");
  t.add("pservers", pservers, "HOST:PORT,...", "pserver endpoints");
  t.add("endpoint", endpoint, "HOST:PORT",
        "this pserver's advertised host:port (a collective trainer's: the host its pairs listen "
        "on)");
  t.add("rendezvous", rendezvous, "HOST:PORT",
        "collective jobs: where trainer 0 serves the trainers' rendezvous (default: the first of "
        "PADDLE_TRAINER_ENDPOINTS, or TF_CONFIG's chief)");
  t.add("bind", bind, "HOST:PORT", "this pserver's bind address, e.g. 0.0.0.0:6170");
}

void NodeOptions::declare(OptionTable &t) {
  t.group("node options");
  t.add("main", mainPath, "FILE", "main program (.pb or .pbtxt)");
  t.add("startup", startupPath, "FILE", "startup program");
  t.add("dir", dir, "DIR", "a directory written by oar-transpile");
  t.add("load", loadDir, "DIR", "load persistables from DIR/<var>.npy (pservers: whole params)");
  t.add("step", loadStep,
        "with --load of a checkpoint directory (one machine's or a job's pservers'): the step to "
        "load (default: the newest complete one)");
  t.add("save", saveDir, "DIR", "save persistables as DIR/<var>.npy");
  t.add("lr", learningRate,
        "every optimizer's base learning rate (the schedule starts from it), over the program's");
  t.add("eval-only", evalOnly, "skip training: evaluate the test feed (with --load, a checkpoint)");
  static const std::string threadsHelp = llvm::formatv(
      "compute threads (oneDNN/OpenMP; a pserver's service threads), 1 to {0}; default: "
      "OMP_NUM_THREADS if set, else every core alone, 1 for a pserver, the cores split among "
      "trainers whose pservers are all on loopback",
      kMaxComputeThreads);
  t.add("num-threads", numThreads, threadsHelp, 1, kMaxComputeThreads);
  trainer.declare(t);
  t.group("distributed job (flags override PADDLE_* and TF_CONFIG)");
  place.declare(t);
  config.declare(t);
  timeouts.declare(t);
  checkpoints.declare(t);
  pserver.declare(t);
  scheduler.declare(t);
  t.group("CURVE keys (oar-keygen writes them; oar-launch makes its own)");
  keys.declare(t);
}

} // namespace oar::runtime
