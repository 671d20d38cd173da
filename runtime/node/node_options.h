// Everything a user sets on one node of a job, or on a run on one machine, declared once: each
// group is a type that declares its own flags (the plan's in transpiler/config.h, the pserver's
// in runtime/pserver/pserver_options.h, ...), and NodeOptions::declare lists them all. The
// tools' flags and any other front end are made from that list.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "checkpoint/checkpoint_options.h"
#include "feed/feed_overrides.h"
#include "runtime/cluster/scheduler_settings.h"
#include "runtime/pserver/pserver_options.h"
#include "runtime/security/curve.h"
#include "runtime/wire/timeouts.h"
#include "transpiler/config.h"

namespace oar::runtime {

/// What a user sets on a trainer (or a run on one machine): its data, evaluations and reports.
struct TrainerOptions {
  FeedOverrides feed;          ///< --data, --test-data, --epochs, --batch-size
  std::string evalEvery;       ///< --eval-every: N steps, or "epoch" (trainer 0)
  std::string keepBest;        ///< --keep-best: auc | loss | accuracy
  int64_t earlyStop = 0;       ///< --early-stop: evaluations without improving (0: never stop)
  std::string metricsPath;     ///< --metrics: a CSV of every step and evaluation
  std::string testScoresPath;  ///< --test-scores: the final evaluation's predictions
  std::string predictPath;     ///< --predict (one machine): predictions instead of training
  bool allowNonFinite = false; ///< --allow-nonfinite: train on after a NaN or inf loss
  int64_t logEvery = 0;        ///< --log-every (0: about 20 lines)
  std::string device;          ///< --device (empty: the program's, else cpu)
  int collectiveStreams = 1;   ///< --collective-streams

  void declare(OptionTable &table);
};

/// Where a node stands in its job, as its flags say: each one given overrides the environment's
/// launch convention (runtime/cluster/cluster.h), the others leave it as it is.
struct NodePlace {
  std::optional<std::string> role; ///< trainer | pserver | scheduler ("": one machine)
  std::optional<int64_t> trainerId, trainers;
  std::optional<std::string> pservers; ///< host:port,...
  std::optional<std::string> endpoint; ///< a pserver's own (a collective trainer's, too)
  std::optional<std::string> scheduler;
  std::optional<int64_t> pserverId, pserverCount; ///< with a scheduler
  std::string rendezvous; ///< collective jobs: where trainer 0 serves the rendezvous
  std::string bind;       ///< the address a server binds instead of its endpoint
  bool elastic = false;   ///< async: trainers may join the running job
  std::chrono::milliseconds registerTimeout = kDefaultRegisterTimeout;

  void declare(OptionTable &table);
};

struct NodeOptions {
  /// The programs: a transpiled directory, or the single-machine main and startup.
  std::string mainPath, startupPath, dir;
  std::string loadDir, saveDir;      ///< --load, --save
  std::optional<int64_t> loadStep;   ///< --step: which checkpoint step --load reads
  std::optional<float> learningRate; ///< --lr, over the program's (and a checkpoint's)
  bool evalOnly = false;             ///< --eval-only
  std::optional<int> numThreads;     ///< --num-threads (else OMP_NUM_THREADS, else a default)

  NodePlace place;
  DistributeConfig config; ///< the plan, for transpiling in-process
  Timeouts timeouts;
  CheckpointOptions checkpoints;
  CurveFiles keys;
  PserverOptions pserver;
  SchedulerSettings scheduler;
  TrainerOptions trainer;

  /// Declares every setting above, group by group. The table refers to these fields: they
  /// must outlive it, where they are.
  void declare(OptionTable &table);
};

} // namespace oar::runtime
