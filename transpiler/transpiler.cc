// transpile() and writing its outputs.
#include "transpiler/transpiler.h"

#include <functional>
#include <optional>

#include "ir/write_file.h"
#include "support/error.h"
#include "transpiler/arena_blocks.h"
#include "transpiler/passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

TranspileInputs::TranspileInputs(const proto::Program &main, const proto::Program &startup,
                                 const DistributePlan &plan, uint64_t jobHash)
    : main(main), startup(startup), plan(plan), jobHash(jobHash) {
  mainVars.reserve(main.blocks(0).vars_size()); // no rehash, which reads every name again
  startupWriters.reserve(startup.blocks(0).ops_size());
  for (const proto::Var &v : main.blocks(0).vars())
    mainVars[v.name()] = &v;
  for (const proto::Op &op : startup.blocks(0).ops())
    for (const proto::Slot &slot : op.outputs())
      for (const std::string &n : slot.names())
        startupWriters.try_emplace(n, &op);
  paramsOn.resize(plan.config.pservers.size());
  for (const ParamPlan &p : plan.params)
    for (const VarBlock &b : p.blocks) {
      std::vector<LocalParam> &here = paramsOn[b.endpointIndex];
      if (here.empty() || here.back().param != &p)
        here.push_back({&p, {}});
      here.back().blocks.push_back(&b);
    }
}

const TranspileInputs::Digests &TranspileInputs::digests() const {
  std::call_once(digestsOnce_, [this] {
    digests_ = {jobDigest(plan, jobHash, /*withEndpoints=*/true),
                jobDigest(plan, jobHash, /*withEndpoints=*/false)};
  });
  return digests_;
}

namespace {

/// Runs `jobs` on up to one thread per core and returns the error of the lowest-numbered job
/// that failed, so the message does not depend on timing.
llvm::Error runInParallel(llvm::ArrayRef<std::function<llvm::Error()>> jobs) {
  std::vector<std::optional<llvm::Error>> errors(jobs.size());
  {
    unsigned cores = llvm::hardware_concurrency().compute_thread_count();
    llvm::ThreadPool pool(llvm::hardware_concurrency(
        std::min(cores, static_cast<unsigned>(std::max<size_t>(jobs.size(), 1)))));
    for (size_t i = 0; i < jobs.size(); ++i)
      pool.async([&, i] {
        if (llvm::Error err = jobs[i]())
          errors[i] = std::move(err);
      });
    pool.wait();
  }
  llvm::Error first = llvm::Error::success();
  for (std::optional<llvm::Error> &err : errors)
    if (err) {
      if (first)
        llvm::consumeError(std::move(*err));
      else
        first = std::move(*err);
    }
  return first;
}

} // namespace

llvm::Expected<TranspileResult> transpile(const proto::Program &main, const proto::Program &startup,
                                          const DistributeConfig &config) {
  TranspileState state(main, startup, config);
  for (const TranspilePass &pass : transpilePasses())
    if (llvm::Error err = pass.run(state))
      return err;
  return std::move(state.result);
}

llvm::Error programsPass(TranspileState &state) {
  if (state.config.mode == Mode::Collective) // collectivePass wrote the job
    return llvm::Error::success();
  TranspileResult &r = state.result;
  const DistributeConfig &config = state.config;
  TranspileInputs in(state.source(), state.startup, r.plan, state.jobHash);
  // The programs are independent given `in`, which the jobs only read, and each job writes only
  // its own programs: building them in parallel cannot change what they hold. Most of the time
  // goes to allocating messages, so each job's programs go on an arena of its own (an arena
  // shared by two threads would make them wait on each other).
  using google::protobuf::Arena;
  auto newArena = [&] {
    r.arenas_.push_back(newProgramArena());
    return r.arenas_.back().get();
  };
  auto programOn = [](Arena *arena) { return Arena::CreateMessage<proto::Program>(arena); };
  Arena *trainerArena = newArena();
  r.trainer_ = programOn(trainerArena);
  r.trainerStartup_ = programOn(trainerArena);
  size_t n = config.pservers.size();
  for (size_t i = 0; i < n; ++i) {
    Arena *pserverArena = newArena();
    r.pservers_.push_back(programOn(pserverArena));
    r.pserverStartups_.push_back(programOn(pserverArena));
  }
  std::vector<std::function<llvm::Error()>> jobs;
  // First the digests, which every builder asks for at its end, then the largest job.
  jobs.push_back([&]() -> llvm::Error {
    in.digests();
    return llvm::Error::success();
  });
  jobs.push_back([&]() -> llvm::Error {
    if (llvm::Error err = buildTrainerProgram(in, *r.trainer_))
      return err;
    buildTrainerStartup(in, *r.trainer_, *r.trainerStartup_);
    return llvm::Error::success();
  });
  for (size_t i = 0; i < n; ++i)
    jobs.push_back([&, i]() -> llvm::Error {
      buildPserverProgram(in, i, *r.pservers_[i]);
      return buildPserverStartup(in, i, *r.pserverStartups_[i]);
    });
  return runInParallel(jobs);
}

llvm::Error writeTranspiled(const TranspileResult &r, llvm::StringRef dir, bool text,
                            llvm::StringRef origin) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return makeError("{0}: cannot create directory: {1}", dir, ec.message());
  auto write = [&](const proto::Program &p, const std::string &stem,
                   const std::string &what) -> llvm::Error {
    std::string head = what + ", " + origin.str();
    for (const char *ext : {".pb", ".pbtxt"}) {
      if (std::string(ext) == ".pbtxt" && !text)
        continue;
      llvm::SmallString<256> path(dir);
      llvm::sys::path::append(path, stem + ext);
      if (llvm::Error err = saveProgram(p, path, head))
        return err;
    }
    return llvm::Error::success();
  };
  size_t n = r.numPservers();
  std::string trainers = std::to_string(r.plan.config.trainers);
  if (llvm::Error err = write(r.trainer(), "trainer", "trainer of " + trainers))
    return err;
  if (llvm::Error err = write(r.trainerStartup(), "trainer.startup", "trainer startup"))
    return err;
  for (size_t i = 0; i < n; ++i) {
    std::string what = "pserver " + std::to_string(i) + " of " + std::to_string(n) + " (" +
                       r.plan.config.pservers[i] + ")";
    if (llvm::Error err = write(r.pserver(i), "pserver." + std::to_string(i), what))
      return err;
    if (llvm::Error err = write(r.pserverStartup(i), "pserver." + std::to_string(i) + ".startup",
                                what + " startup"))
      return err;
  }
  llvm::SmallString<256> planPath(dir);
  llvm::sys::path::append(planPath, "plan.txt");
  return writeFile(planPath, planPath, "", [&](llvm::raw_ostream &os) { os << r.plan.text(); });
}

} // namespace oar
