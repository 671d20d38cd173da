// Transpile-time benchmark: a program with 1,000 parameters of mixed shapes (500 fc layers of
// random widths, Adam) over 16 endpoints. Prints the time of transpile() and of writing files.
#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <random>
#include <thread>

#include "api/optimizer.h"
#include "transpiler/transpiler.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

namespace {
/// CPU seconds this process (all its threads) has used: unlike the wall clock, it does not count
/// the time a busy host keeps the process waiting for a core.
double cpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto seconds = [](const timeval &t) { return t.tv_sec + t.tv_usec * 1e-6; };
  return seconds(u.ru_utime) + seconds(u.ru_stime);
}
} // namespace

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("bench_transpile: ");
  // `bench_transpile [ROUNDS]`: more rounds (default 5) for a profile of transpile() alone.
  int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  oar::ModelBuilder m;
  std::mt19937_64 rng(7);
  std::string h = m.data("x", {64});
  for (int i = 0; i < 500; ++i) // 500 x (weight + bias) = 1,000 parameters
    h = m.fc(h, 8 + static_cast<int64_t>(rng() % 1024), i % 2 ? "relu" : "");
  exitOnErr(oar::Adam(0.001f).minimize(m, m.mean(h)));
  oar::DistributeConfig config;
  config.trainers = 4;
  for (int i = 0; i < 16; ++i)
    config.pservers.push_back("10.0.0." + std::to_string(i + 1) + ":6170");
  double best = 1e9, first = 0, leastCpu = 1e9;
  oar::TranspileResult result;
  for (int round = 0; round < rounds; ++round) {
    double cpuStart = cpuSeconds();
    auto start = std::chrono::steady_clock::now();
    oar::TranspileResult r = exitOnErr(oar::transpile(m.main(), m.startup(), config));
    double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::min(best, took);
    leastCpu = std::min(leastCpu, cpuSeconds() - cpuStart);
    if (round == 0)
      first = took;        // what a tool that transpiles once takes: its memory is all fresh
    result = std::move(r); // freeing the previous round's programs is not timed... nor is this
  }
  size_t blocks = 0;
  for (const auto &p : result.plan.params)
    blocks += p.blocks.size();
  llvm::outs() << llvm::formatv("machine: {0} cores\ntranspile of {1} params ({2} blocks) over {3} "
                                "endpoints, {4} ops: best of {7} = {5:f3} s (first round {6:f3} s; "
                                "least CPU time of a round {8:f3} s)\n",
                                std::thread::hardware_concurrency(), result.plan.params.size(),
                                blocks, config.pservers.size(), m.main().blocks(0).ops_size(), best,
                                first, rounds, leastCpu);
  return 0;
}
