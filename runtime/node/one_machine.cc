// A run on one machine: startup, --load, then training (with checkpoints, evaluations and the
// best model), an evaluation only, or predictions; then --save.
#include "runtime/node/one_machine.h"

#include "checkpoint/load_model.h"
#include "checkpoint/save_model.h"
#include "checkpoint/training_checkpoints.h"
#include "ops/verify.h"
#include "runtime/node/save_lock.h"
#include "runtime/node/step_output.h"
#include "runtime/node/trainer_settings.h"
#include "serving/export.h"
#include "serving/inference_program.h"
#include "serving/predict_stream.h"
#include "serving/score_file.h"
#include "support/error.h"
#include "train/learning_rate.h"

namespace oar::runtime {

namespace {

struct OneMachine {
  const NodeOptions &o;
  const NodeIo &io;
  proto::Program main, startup;
  Scope scope;

  llvm::raw_ostream &out() { return *io.out; }

  /// The programs, with the data flags applied; a job's program is refused.
  llvm::Error loadPrograms() {
    if (o.mainPath.empty() || o.startupPath.empty())
      return makeError("--main and --startup are required");
    if (!o.checkpoints.dir.empty() && (o.evalOnly || !o.trainer.predictPath.empty()))
      return makeError("--checkpoint-dir checkpoints training; --{0} trains nothing",
                       o.evalOnly ? "eval-only" : "predict");
    if (llvm::Error err = loadVerifiedProgram(o.mainPath).moveInto(main))
      return err;
    if (llvm::Error err = applyFeedOverrides(main, o.trainer.feed, o.mainPath))
      return err;
    if (llvm::Error err = loadVerifiedProgram(o.startupPath).moveInto(startup))
      return err;
    if (!main.dist().role().empty())
      return makeError("{0} is a {1} program of a distributed job; run it with --role or "
                       "through oar-launch",
                       o.mainPath, main.dist().role());
    return llvm::Error::success();
  }

  /// --load: every persistable from a checkpoint of any layout, refused when incomplete.
  llvm::Error load() {
    auto ckpt = CheckpointReader::open(o.loadDir, o.loadStep);
    if (!ckpt)
      return ckpt.takeError();
    auto loaded = loadSingleMachine(main, startup, scope, *ckpt);
    if (!loaded)
      return loaded.takeError();
    bool training = !o.evalOnly && o.trainer.predictPath.empty();
    if (llvm::Error err = checkStateComplete(*loaded, *ckpt, training))
      return err;
    out() << loaded->summary(*ckpt, training) << "\n";
    return llvm::Error::success();
  }

  /// The test evaluation, writing its predictions to --test-scores when given.
  llvm::Expected<EvalResult> evaluateWithScores(Executor &exec) {
    if (o.trainer.testScoresPath.empty())
      return evaluate(exec, main, scope, main.test_feed());
    auto outputs = servedOutputs(main);
    if (!outputs)
      return outputs.takeError();
    auto scores = ScoreFile::open(o.trainer.testScoresPath, std::move(*outputs));
    if (!scores)
      return scores.takeError();
    auto eval =
        evaluate(exec, main, scope, main.test_feed(), [&](const Scope &s) { (*scores)->write(s); });
    if (!eval)
      return eval.takeError();
    if (llvm::Error err = (*scores)->close())
      return std::move(err);
    return eval;
  }

  /// --predict: the loaded model exported in memory, its predictions of the test rows.
  llvm::Error predict() {
    const std::string &path = o.trainer.predictPath;
    if (o.loadDir.empty())
      return makeError("--predict needs --load DIR: the trained values to predict with");
    if (main.test_feed().columns_size() == 0)
      return makeError("{0} has no test feed to predict (give --test-data)", o.mainPath);
    auto ckpt = CheckpointReader::open(o.loadDir, o.loadStep);
    if (!ckpt)
      return ckpt.takeError();
    auto model = exportModel(main, startup, *ckpt, {});
    if (!model)
      return model.takeError();
    // The checkpoint's own scores, to the bit: every layer on the GEMM, as training ran it.
    PredictorOptions options;
    options.sparseInputs = false;
    auto predictor = Predictor::fromExport(std::move(*model), options);
    if (!predictor)
      return predictor.takeError();
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec)
      return makeError("{0}: cannot write: {1}", path, ec.message());
    auto rows = predictFeed(**predictor, (*predictor)->program().test_feed(), os, 1);
    if (!rows)
      return rows.takeError();
    os.close();
    if (os.has_error())
      return makeError("{0}: write failed: {1}", path, os.error().message());
    out() << "predicted " << *rows << " rows into " << path << "\n";
    return llvm::Error::success();
  }

  /// Training, with its checkpoints, evaluations and best model, then its last lines.
  llvm::Error train(Executor &exec, std::optional<BestModel> &best) {
    auto output = StepOutput::open(out(), main, 0, 1, o.trainer.metricsPath, o.trainer.logEvery);
    if (!output)
      return output.takeError();
    TrainOptions opts;
    opts.shouldStop = io.shouldStop;
    opts.onStep = (*output)->stepCallback();
    opts.onEval = (*output)->evalCallback();
    if (llvm::Error err = setEvaluations(o.trainer, opts))
      return err;
    if (best)
      opts.afterEval = best->callback(main);
    std::optional<TrainingCheckpoints> checkpoints;
    if (!o.checkpoints.dir.empty()) {
      const CheckpointOptions &c = o.checkpoints;
      checkpoints.emplace(c.dir, main, startup, c.every, c.keep);
      // Over --load, if any.
      auto log = [this](const std::string &line) {
        if (io.log)
          io.log(line);
      };
      if (llvm::Error err = checkpoints->resume(scope, log).moveInto(opts.startStep))
        return err;
      opts.afterStep = [&](const StepReport &r, const Scope &s) {
        return checkpoints->afterStep(r, s);
      };
    }
    if (o.learningRate) // over the program's and any loaded checkpoint's
      if (llvm::Error err = setLearningRate(main, scope, *o.learningRate))
        return err;
    auto reports = trainLoop(exec, main, scope, opts);
    if (!reports)
      return reports.takeError();
    if (checkpoints)
      if (llvm::Error err = checkpoints->finish(*reports, scope))
        return err;
    (*output)->summary("");
    if (best && !best->summary().empty())
      out() << best->summary() << "\n";
    return llvm::Error::success();
  }

  /// Whatever this run does, after its programs.
  llvm::Error run() {
    if (llvm::Error err = loadPrograms())
      return err;
    // Held until the run ends, so no other job saves into the directory meanwhile.
    std::string lockJob = saveLockJob("", "");
    auto saveLock = lockSaveDir(o.saveDir, lockJob);
    if (!saveLock)
      return saveLock.takeError();
    auto checkpointLock = lockSaveDir(o.checkpoints.dir, lockJob, "--checkpoint-dir");
    if (!checkpointLock)
      return checkpointLock.takeError();
    auto place = computePlace(o.trainer, main, o.mainPath);
    if (!place)
      return place.takeError();
    Executor exec(place->device);
    if (llvm::Error err = exec.run(startup, scope))
      return err;
    if (!o.loadDir.empty())
      if (llvm::Error err = load())
        return err;
    std::optional<BestModel> best;
    if (llvm::Error err = bestModelOf(o.trainer, main, o.saveDir, true).moveInto(best))
      return err;
    if (!o.trainer.predictPath.empty())
      return predict();
    bool hasTestFeed = main.has_test_feed() && main.test_feed().columns_size() > 0;
    if (o.evalOnly && !hasTestFeed)
      return makeError("{0} has no test feed to evaluate", o.mainPath);
    if (!o.evalOnly)
      if (llvm::Error err = train(exec, best))
        return err;
    if (hasTestFeed) {
      auto eval = evaluateWithScores(exec);
      if (!eval)
        return eval.takeError();
      printEval(out(), *eval);
    }
    if (o.evalOnly || o.saveDir.empty())
      return llvm::Error::success();
    if (llvm::Error err = saveSingleMachine(main, scope, o.saveDir))
      return err;
    out() << "saved persistables to " << o.saveDir << "\n";
    return llvm::Error::success();
  }
};

} // namespace

llvm::Error runOneMachine(const NodeOptions &options, const NodeIo &io) {
  return OneMachine{options, io, {}, {}, {}}.run();
}

} // namespace oar::runtime
