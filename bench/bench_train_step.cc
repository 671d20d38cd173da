// Training-step benchmark: fit_a_line (batch 20) and the MLP 784-512-256-10 (batch 128), oar's
// CPU executor against PyTorch (when python3-torch is installed) at equal thread counts,
// interleaved in one run. Prints ms/step, samples/s and the oar/torch ratio.
//
// Usage: bench_train_step [--num-threads N] [--rounds R]   (run through bench/run.sh for the env)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "api/recipes.h"
#include "executor/executor.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::opt<int> threads("num-threads", cl::desc("threads for oar and torch"), cl::init(1));
static cl::opt<int> rounds("rounds", cl::desc("interleaved rounds (median reported)"), cl::init(5));
static cl::opt<std::string> torchScript("torch-script", cl::desc("path of torch_train_step.py"),
                                        cl::init(OAR_BENCH_DIR "/torch_train_step.py"));

static std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

struct Case {
  const char *name;
  oar::RecipeSpec spec;
  int steps;
};

/// ms per oar training step on random data of the model's shape.
static double oarMsPerStep(const Case &c) {
  ExitOnError exitOnErr("bench: ");
  oar::ModelBuilder m = exitOnErr(oar::buildRecipe(c.spec));
  oar::Executor exec;
  oar::Scope scope;
  exitOnErr(exec.run(m.startup(), scope));
  int64_t b = c.spec.batchSize;
  bool classify = c.spec.loss == "softmax_with_cross_entropy";
  oar::Tensor &x = scope.get(classify ? "img" : "x");
  x.resize(oar::proto::F32, {b, c.spec.in});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>((i * 7919) % 2000) / 1000.0f - 1.0f;
  oar::Tensor &y = scope.get(classify ? "label" : "y");
  if (classify) {
    y.resize(oar::proto::I64, {b, 1});
    for (int64_t i = 0; i < b; ++i)
      y.data<int64_t>()[i] = i % 10;
  } else {
    y.resize(oar::proto::F32, {b, 1});
  }
  for (int i = 0; i < 20; ++i)
    exitOnErr(exec.run(m.main(), scope));
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < c.steps; ++i)
    exitOnErr(exec.run(m.main(), scope));
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         c.steps;
}

/// ms per PyTorch step, or a negative value when torch is not available.
static double torchMsPerStep(const char *model, int steps) {
  std::string cmd = formatv("/usr/bin/python3 {0} {1} {2} {3} 2>/dev/null", torchScript.getValue(),
                            model, threads.getValue(), steps)
                        .str();
  FILE *p = popen(cmd.c_str(), "r");
  if (!p)
    return -1;
  double ms = -1;
  if (std::fscanf(p, "ms_per_step %lf", &ms) != 1)
    ms = -1;
  pclose(p);
  return ms;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "oar training-step benchmark\n");
  outs() << formatv("machine: {0}, {1} cores; threads used: {2} (OMP_NUM_THREADS={3})\n",
                    cpuModel(), std::thread::hardware_concurrency(), threads.getValue(),
                    getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : "unset");
  std::vector<Case> cases;
  Case line{"fit_a_line", {}, 2000};
  line.spec.model = "linear", line.spec.in = 13, line.spec.out = 1, line.spec.batchSize = 20;
  cases.push_back(line);
  Case mlp{"mlp", {}, 200};
  mlp.spec.model = "mlp", mlp.spec.in = 784, mlp.spec.hidden = {512, 256}, mlp.spec.out = 10;
  mlp.spec.loss = "softmax_with_cross_entropy", mlp.spec.batchSize = 128;
  cases.push_back(mlp);
  outs() << formatv("{0,-12} {1,6} {2,12} {3,14} {4,12} {5,14} {6,10}\n", "model", "batch",
                    "oar ms/step", "oar samples/s", "torch ms", "torch samples/s", "oar/torch");
  for (const Case &c : cases) {
    std::vector<double> oarMs, torchMs;
    for (int r = 0; r < rounds; ++r) { // interleaved so both see the same machine load
      oarMs.push_back(oarMsPerStep(c));
      double t = torchMsPerStep(c.name, c.steps);
      if (t > 0)
        torchMs.push_back(t);
    }
    double o = median(oarMs), t = median(torchMs);
    double b = static_cast<double>(c.spec.batchSize);
    if (t > 0)
      outs() << formatv("{0,-12} {1,6} {2,12:f4} {3,14:f0} {4,12:f4} {5,14:f0} {6,10:f2}\n", c.name,
                        c.spec.batchSize, o, b * 1000 / o, t, b * 1000 / t, o / t);
    else
      outs() << formatv("{0,-12} {1,6} {2,12:f4} {3,14:f0} {4,12} {5,14} {6,10}\n", c.name,
                        c.spec.batchSize, o, b * 1000 / o, "n/a", "n/a", "(no torch)");
  }
  return 0;
}
