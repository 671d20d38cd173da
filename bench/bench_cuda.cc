// GPU training-step benchmark: MLP 784-512-256-10 (batch 128 and 1024) and LeNet (batch 128),
// one executor on cuda:0 against one on the CPU, interleaved in one run. Each step feeds the
// batch from host memory and reads the loss back, as a trainer does, so GPU times include the
// upload and the step's synchronisation.
// PyTorch on the GPU is not compared: Debian's python3-torch is built without CUDA.
//
// Usage: bench_cuda [--num-threads N] [--rounds R]
#include <chrono>
#include <thread>

#include "api/recipes.h"
#include "executor/executor.h"
#include "executor/threads.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

static cl::opt<int> threads("num-threads", cl::desc("CPU executor threads"), cl::init(1));
static cl::opt<int> rounds("rounds", cl::desc("interleaved rounds (median reported)"), cl::init(3));

struct Case {
  const char *name;
  oar::RecipeSpec spec;
  int steps;
};

/// ms per training step on `device`, on fixed synthetic data of the model's shape.
static double msPerStep(const Case &c, oar::Device device) {
  ExitOnError exitOnErr("bench_cuda: ");
  oar::ModelBuilder m = exitOnErr(oar::buildRecipe(c.spec));
  oar::Executor exec(device);
  oar::Scope scope;
  exitOnErr(exec.run(m.startup(), scope));
  int64_t b = c.spec.batchSize;
  // Each step feeds the batch anew from host memory, as a trainer's data feed does.
  oar::Tensor x;
  if (c.spec.model == "lenet")
    x.resize(oar::proto::F32, {b, 1, 28, 28});
  else
    x.resize(oar::proto::F32, {b, c.spec.in});
  for (int64_t i = 0; i < x.numel(); ++i)
    x.data<float>()[i] = static_cast<float>((i * 7919) % 2000) / 1000.0f - 1.0f;
  oar::Tensor y(oar::proto::I64, {b, 1});
  for (int64_t i = 0; i < b; ++i)
    y.data<int64_t>()[i] = i % 10;
  auto step = [&] {
    scope.get("img") = x; // shares the host buffer; a GPU executor copies it over
    scope.get("label") = y;
    exitOnErr(exec.run(m.main(), scope));
    (void)oar::onHost(*scope.find(m.main().loss())); // waits for the step, as a trainer does
  };
  for (int i = 0; i < 10; ++i)
    step();
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < c.steps; ++i)
    step();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         c.steps;
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "oar GPU training-step benchmark\n");
  if (llvm::Error err = oar::usePlace({oar::Device::Cuda, 0})) {
    outs() << "bench_cuda: skipped: " << toString(std::move(err)) << "\n";
    return 0;
  }
  oar::setComputeThreads(threads);
  outs() << formatv("cuda:0 against the CPU executor with {0} thread(s); PyTorch GPU: n/a "
                    "(Debian's python3-torch has no CUDA)\n",
                    threads.getValue());
  std::vector<Case> cases;
  for (int64_t batch : {128, 1024}) {
    Case mlp{"mlp", {}, batch == 128 ? 100 : 20};
    mlp.spec.model = "mlp", mlp.spec.in = 784, mlp.spec.hidden = {512, 256}, mlp.spec.out = 10;
    mlp.spec.loss = "softmax_with_cross_entropy", mlp.spec.batchSize = batch;
    cases.push_back(mlp);
  }
  Case lenet{"lenet", {}, 10};
  lenet.spec.model = "lenet", lenet.spec.in = 784, lenet.spec.out = 10;
  lenet.spec.loss = "softmax_with_cross_entropy", lenet.spec.batchSize = 128;
  cases.push_back(lenet);
  outs() << formatv("{0,-8} {1,6} {2,12} {3,14} {4,12} {5,14} {6,9}\n", "model", "batch",
                    "gpu ms/step", "gpu samples/s", "cpu ms/step", "cpu samples/s", "speedup");
  for (const Case &c : cases) {
    std::vector<double> gpu, cpu;
    for (int r = 0; r < rounds; ++r) { // interleaved so both see the same machine load
      gpu.push_back(msPerStep(c, oar::Device::Cuda));
      cpu.push_back(msPerStep(c, oar::Device::Cpu));
    }
    double g = median(gpu), h = median(cpu), b = static_cast<double>(c.spec.batchSize);
    outs() << formatv("{0,-8} {1,6} {2,12:f3} {3,14:f0} {4,12:f3} {5,14:f0} {6,9:f1}\n", c.name,
                      c.spec.batchSize, g, b * 1000 / g, h, b * 1000 / h, h / g);
  }
  return 0;
}
