// The training loop, evaluation and checkpoints.
#include "train/training_loop.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>

#include "executor/finite_check.h"
#include "executor/npy.h"
#include "executor/save_set.h"
#include "executor/threads.h"
#include "ops/test_mode.h"
#include "support/error.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace oar {

static double scalarOf(const Scope &scope, llvm::StringRef name) {
  const Tensor *found = scope.find(name);
  if (!found || !found->initialized() || found->numel() < 1)
    return 0;
  Tensor t = onHost(*found);
  return t.dtype() == proto::F64 ? t.data<double>()[0] : t.data<float>()[0];
}

static void feedBatch(Scope &scope, const BatchSource &source, std::vector<Tensor> &batch) {
  for (size_t c = 0; c < batch.size(); ++c) {
    Tensor &dst = scope.get(source.columns()[c]);
    dst.resize(batch[c].dtype(), batch[c].dims());
    std::memcpy(dst.raw(), batch[c].raw(), batch[c].bytes());
  }
}

/// `feed` read once, in order: how the test feed is read.
static proto::DataFeed readOnce(const proto::DataFeed &feed) {
  proto::DataFeed once = feed;
  once.set_epochs(1);
  once.set_shuffle(false);
  return once;
}

/// The error for a step whose loss is NaN or inf.
static llvm::Error nonFiniteLoss(const proto::Program &main, const Scope &scope,
                                 const StepReport &r) {
  std::string first = describeFirstNonFinite(main.blocks(0), scope);
  return makeError("step {0} (epoch {1}): loss {2} is {3}; the first non-finite var is {4}; lower "
                   "the learning rate or check the data, or pass --allow-nonfinite to go on",
                   r.step, r.epoch, main.loss(),
                   std::isnan(r.loss) ? "nan" : (r.loss > 0 ? "inf" : "-inf"),
                   first.empty() ? main.loss() : first);
}

llvm::Expected<std::vector<StepReport>> trainLoop(Executor &exec, const proto::Program &main,
                                                  Scope &scope, const TrainOptions &opts) {
  if (!main.has_train_feed() || main.train_feed().columns_size() == 0)
    return makeError("the program has no train feed; build it with a data feed (oar-model "
                     "--data ... or ModelBuilder::setTrainFeed)");
  bool evals = (opts.evalEverySteps > 0 || opts.evalEveryEpoch) && opts.evaluates;
  if (evals && main.test_feed().columns_size() == 0)
    return makeError("evaluating during training needs a test feed (--test-data or "
                     "ModelBuilder::setTestFeed)");
  std::vector<Tensor> batch;
  int64_t epoch = 0;
  // The train rows, read up to `step`: batches come in the same order on every pass.
  auto openAt = [&](int64_t step) -> llvm::Expected<std::unique_ptr<BatchSource>> {
    auto source = openBatchSource(main.train_feed(), main.blocks(0), opts.trainerId, opts.trainers);
    if (!source)
      return source.takeError();
    for (int64_t i = 0; i < step; ++i)
      if (auto more = (*source)->next(batch, epoch); !more || !*more)
        return more ? makeError("cannot go on from step {0}: the data has fewer batches", step)
                    : more.takeError();
    return source;
  };
  auto reader = openAt(opts.startStep);
  if (!reader)
    return reader.takeError();
  std::unique_ptr<BatchSource> testRows;
  if (evals) {
    auto rows = openBatchSource(readOnce(main.test_feed()), main.blocks(0));
    if (!rows)
      return rows.takeError();
    testRows = std::move(*rows);
  }
  std::vector<StepReport> reports;
  int64_t step = opts.startStep,
          total = (*reader)->batchesPerEpoch() * std::max<int64_t>(main.train_feed().epochs(), 1);
  if (opts.agreeOnBatches)
    if (llvm::Error err = opts.agreeOnBatches((*reader)->batchesPerEpoch()))
      return std::move(err);
  bool agreeEachStep = opts.agreeOnStep && (*reader)->batchesPerEpoch() == 0;
  for (;; ++step) {
    auto more = (*reader)->next(batch, epoch);
    if (!more)
      return more.takeError();
    if (agreeEachStep)
      if (llvm::Error err = opts.agreeOnStep(step, *more).moveInto(*more))
        return std::move(err);
    if (!*more)
      break;
    if (opts.shouldStop && opts.shouldStop())
      return makeError("stopped by signal before step {0}", step);
    fitComputeThreadsToLoad();
    auto start = std::chrono::steady_clock::now();
    feedBatch(scope, **reader, batch);
    if (llvm::Error err = exec.run(main, scope)) {
      if (!opts.recover)
        return addContext(std::move(err), llvm::formatv("step {0}", step).str());
      auto from = opts.recover(std::move(err));
      if (!from)
        return addContext(from.takeError(), llvm::formatv("step {0}", step).str());
      reader = openAt(*from);
      if (!reader)
        return reader.takeError();
      while (!reports.empty() && reports.back().step >= *from)
        reports.pop_back();
      step = *from - 1; // the loop's ++step
      continue;
    }
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    StepReport r;
    r.step = step;
    r.epoch = epoch;
    r.rows = batch[0].dim(0);
    r.totalSteps = total;
    r.loss = main.loss().empty() ? 0 : scalarOf(scope, main.loss());
    r.samplesPerSec = secs > 0 ? r.rows / secs : 0;
    for (const std::string &m : main.metrics())
      r.metrics.push_back(scalarOf(scope, m));
    if (opts.stopOnNonFinite && !std::isfinite(r.loss))
      return nonFiniteLoss(main, scope, r);
    reports.push_back(r);
    if (opts.onStep)
      opts.onStep(r);
    if (opts.afterStep)
      if (llvm::Error err = opts.afterStep(r, scope))
        return addContext(std::move(err), llvm::formatv("after step {0}", step).str());
    bool due = (opts.evalEverySteps > 0 && (r.step + 1) % opts.evalEverySteps == 0) ||
               (opts.evalEveryEpoch && (*reader)->atEpochEnd());
    if (due) {
      bool stop = false;
      if (opts.evaluates) {
        auto eval = evaluate(exec, main, scope, *testRows);
        if (!eval)
          return addContext(eval.takeError(), llvm::formatv("after step {0}", r.step).str());
        if (opts.onEval)
          opts.onEval(r, *eval);
        if (opts.afterEval)
          if (llvm::Error err = opts.afterEval(r, *eval, scope).moveInto(stop))
            return addContext(std::move(err), llvm::formatv("after step {0}", r.step).str());
      }
      if (opts.agreeOnStop)
        if (llvm::Error err = opts.agreeOnStop(r.step, stop).moveInto(stop))
          return std::move(err);
      if (stop)
        break;
    }
    if (opts.jobStopped && opts.jobStopped())
      break;
  }
  return reports;
}

llvm::Expected<EvalResult> evaluate(Executor &exec, const proto::Program &main, Scope &scope,
                                    const proto::DataFeed &feed, const EvalBatchHook &afterBatch) {
  auto rows = openBatchSource(readOnce(feed), main.blocks(0));
  if (!rows)
    return rows.takeError();
  return evaluate(exec, main, scope, **rows, afterBatch);
}

/// The state a metric's op keeps across batches: the vars it reads and writes in place (auc's
/// histograms). Empty for per-batch metrics (accuracy).
static std::vector<std::string> metricState(const proto::Program &main, llvm::StringRef metric) {
  for (const proto::Op &op : main.blocks(0).ops()) {
    std::vector<std::string> outs = allOutputNames(op);
    if (op.role() != proto::FORWARD || !llvm::is_contained(outs, metric))
      continue;
    std::vector<std::string> state;
    for (const std::string &in : allInputNames(op))
      if (llvm::is_contained(outs, in) && !llvm::is_contained(state, in))
        state.push_back(in);
    return state;
  }
  return {};
}

llvm::Expected<EvalResult> evaluate(Executor &exec, const proto::Program &main, Scope &scope,
                                    BatchSource &rows, const EvalBatchHook &afterBatch) {
  if (llvm::Error err = rows.rewind())
    return err;
  EvalResult result;
  result.metrics.reserve(main.metrics_size());
  for (const std::string &m : main.metrics())
    result.metrics.push_back({m, 0.0});
  // A metric with state (a streaming auc) counts the test rows alone, from zeros, and reports its
  // value after the last batch; training's state comes back afterwards.
  std::vector<bool> streaming;
  std::vector<std::pair<std::string, Tensor>> saved;
  for (const std::string &m : main.metrics()) {
    std::vector<std::string> state = metricState(main, m);
    streaming.push_back(!state.empty());
    for (const std::string &name : state)
      if (Tensor *t = scope.find(name); t && t->initialized()) {
        saved.emplace_back(name, t->clone());
        t->setZero();
      }
  }
  auto restore = llvm::make_scope_exit([&] {
    for (auto &[name, t] : saved)
      scope.get(name) = std::move(t);
  });
  // batch_norm and dropout evaluate as they serve (running statistics, no dropping).
  std::optional<proto::Program> testProgram;
  if (ops::hasTrainingBehaviour(main)) {
    testProgram = main;
    ops::setTestMode(*testProgram);
  }
  const proto::Program &program = testProgram ? *testProgram : main;
  std::vector<Tensor> batch;
  int64_t epoch;
  auto forwardOnly = [](const proto::Op &op) { return op.role() == proto::FORWARD; };
  for (;;) {
    auto more = rows.next(batch, epoch);
    if (!more)
      return more.takeError();
    if (!*more)
      break;
    feedBatch(scope, rows, batch);
    if (llvm::Error err = exec.run(program, scope, 0, forwardOnly))
      return addContext(std::move(err), "evaluation");
    if (afterBatch)
      afterBatch(scope);
    int64_t n = batch[0].dim(0);
    result.rows += n;
    result.loss += scalarOf(scope, main.loss()) * n;
    for (size_t i = 0; i < result.metrics.size(); ++i) {
      auto &[name, value] = result.metrics[i];
      value = streaming[i] ? scalarOf(scope, name) : value + scalarOf(scope, name) * n;
    }
  }
  if (result.rows > 0) {
    result.loss /= result.rows;
    for (size_t i = 0; i < result.metrics.size(); ++i)
      if (!streaming[i])
        result.metrics[i].second /= result.rows;
  }
  return result;
}

llvm::Error checkAgainstVar(const Tensor &t, const proto::Var &var, llvm::StringRef source) {
  std::vector<int64_t> want(var.type().dims().begin(), var.type().dims().end());
  bool same = t.dtype() == var.type().dtype() && t.rank() == want.size();
  for (size_t i = 0; same && i < want.size(); ++i)
    same = want[i] < 0 || want[i] == t.dim(i);
  if (!same)
    return makeError("{0}: holds {1}{2} but var {3} is {4}", source, dtypeName(t.dtype()),
                     dimsString(t.dims()), var.name(), typeString(var.type()));
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::string>> loadPersistables(const proto::Program &main, Scope &scope,
                                                          llvm::StringRef dir) {
  if (!llvm::sys::fs::is_directory(dir))
    return makeError("{0}: not a directory to load parameters from", dir);
  if (llvm::Error err = finishInterruptedSaves(dir))
    return err;
  std::vector<std::string> loaded;
  for (const proto::Var &v : main.blocks(0).vars()) {
    if (!v.persistable())
      continue;
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, v.name() + ".npy");
    if (!llvm::sys::fs::exists(path)) {
      if (v.is_parameter())
        return makeError("{0}: missing; every parameter needs a file to load", path);
      continue;
    }
    auto t = readNpy(path);
    if (!t)
      return t.takeError();
    if (llvm::Error err = checkAgainstVar(*t, v, path))
      return err;
    if (llvm::Error err = checkFinite(*t, path))
      return err;
    scope.get(v.name()) = std::move(*t);
    loaded.push_back(v.name());
  }
  return loaded;
}

llvm::Error savePersistables(const proto::Program &main, const Scope &scope, llvm::StringRef dir,
                             bool parametersOnly) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  if (llvm::Error err = finishInterruptedSaves(dir)) // an older save must not land after this one
    return err;
  SaveSet files(dir.str()); // replaced together: a save killed midway leaves the old files
  for (const proto::Var &v : main.blocks(0).vars()) {
    const Tensor *t = scope.find(v.name());
    if (!v.persistable() || (parametersOnly && !v.is_parameter()) || !t || !t->initialized())
      continue;
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, v.name() + ".npy");
    if (llvm::Error err = files.add(path, onHost(*t)))
      return err;
  }
  return files.commit();
}

} // namespace oar
