// The CUDA kernels against the CPU kernels, and a trainer on the GPU beside pservers on the CPU.
// Tests that need a GPU skip with a message when none is visible (or oar was built without the
// CUDA kernels); the registry and error tests run everywhere.
#include <random>

#include "executor/executor.h"
#include "executor/npy.h"
#include "ops/op_registry.h"
#include "test/helpers/expect.h"
#include "test/helpers/fixture.h"
#include "test/helpers/grad_check.h"
#include "test/helpers/job.h"
#include "test/helpers/skip.h"

using namespace oar;

/// Whether the CUDA kernels are loaded: they must be when this build made them.
static bool cudaKernelsLoaded() {
  if (llvm::Error err = loadDeviceKernels(Device::Cuda)) {
#ifdef OAR_WITH_CUDA
    FAIL("this build made the CUDA kernels, but they do not load: " << llvm::toString(std::move(err)));
#endif
    std::string why = llvm::toString(std::move(err));
    oar::test::exitIfSkipsExit(why);
    WARN("skipped: " << why);
    return false;
  }
  return true;
}

/// Whether GPU tests can run here; says why not once per test when they cannot.
static bool gpuVisible() {
  if (!cudaKernelsLoaded())
    return false;
  if (llvm::Error err = usePlace({Device::Cuda, 0})) {
    std::string why = "no GPU visible: " + llvm::toString(std::move(err));
    oar::test::exitIfSkipsExit(why);
    WARN("skipped: " << why);
    return false;
  }
  return true;
}

/// `t` as f32 when it is f64 (other dtypes unchanged).
static Tensor asF32(const Tensor &t) {
  if (t.dtype() != proto::F64)
    return t.clone();
  Tensor out(proto::F32, t.dims());
  for (int64_t i = 0; i < t.numel(); ++i)
    out.data<float>()[i] = static_cast<float>(t.data<double>()[i]);
  return out;
}

/// Every var of `cpu` against the same var of `gpu`, read back to the host.
static void compareScopes(const proto::Program &prog, Scope &cpu, Scope &gpu, double rtol,
                          double atol, const std::string &what) {
  int compared = 0;
  for (const proto::Var &v : prog.blocks(0).vars()) {
    const SelectedRows *cpuRows = cpu.findRows(v.name());
    if (cpuRows) {
      const SelectedRows *gpuRows = gpu.findRows(v.name());
      REQUIRE(gpuRows);
      INFO(what << ": selected rows " << v.name());
      SelectedRows gpuOnHost = *gpuRows; // row ids are host data already; values are not
      gpuOnHost.values = onHost(gpuRows->values);
      CHECK(toleranceRatio(toDense(gpuOnHost), toDense(*cpuRows), rtol, atol) <= 1.0);
      ++compared;
      continue;
    }
    const Tensor *c = cpu.find(v.name());
    if (!c || !c->initialized())
      continue;
    const Tensor *g = gpu.find(v.name());
    INFO(what << ": var " << v.name());
    REQUIRE(g);
    REQUIRE(g->dims() == c->dims());
    Tensor host = onHost(*g);
    if (c->dtype() == proto::F32 || c->dtype() == proto::F64)
      CHECK(toleranceRatio(host, *c, rtol, atol) <= 1.0);
    else
      CHECK(sameBits(host, *c));
    ++compared;
  }
  CHECK(compared > 0);
}

/// Runs `prog` on each device from the same inputs and compares every var.
static void runOnBoth(const proto::Program &prog, const Scope &inputs,
                      const std::vector<std::string> &names, double rtol, double atol,
                      const std::string &what) {
  Scope cpu, gpu;
  for (const std::string &n : names) {
    if (const Tensor *t = inputs.find(n)) {
      cpu.get(n) = t->clone();
      gpu.get(n) = t->clone();
    }
  }
  Executor onCpu(Device::Cpu), onGpu(Device::Cuda);
  REQUIRE_OK(onCpu.run(prog, cpu));
  REQUIRE_OK(onGpu.run(prog, gpu));
  compareScopes(prog, cpu, gpu, rtol, atol, what);
}

TEST_CASE("every differentiable op's CUDA kernels match the CPU's, forward and backward, f64 "
          "and f32",
          "[cuda]") {
  if (!gpuVisible())
    return;
  for (bool f32 : {false, true}) {
    for (GradCheck c : allGradChecks()) {
      if (f32)
        for (auto &[slot, value] : c.inputs)
          value = asF32(value);
      Scope inputs;
      GradCheckProgram g = buildGradCheck(c, inputs);
      std::vector<std::string> names;
      for (const proto::Var &v : g.program.blocks(0).vars())
        names.push_back(v.name());
      runOnBoth(g.program, inputs, names, f32 ? 1e-4 : 1e-10, f32 ? 1e-5 : 1e-12,
                c.op + (f32 ? " f32" : " f64"));
    }
  }
}

/// A program of one op over inputs of the given values; outputs are declared from a CPU run.
static void compareOneOp(const std::string &type, std::vector<std::pair<std::string, Tensor>> in,
                         std::vector<std::string> outSlots, AttrList attrs) {
  ModelBuilder m;
  proto::Block &block = *m.main().mutable_blocks(0);
  Scope inputs;
  SlotMap inSlots, outs;
  std::vector<std::string> names;
  for (size_t i = 0; i < in.size(); ++i) {
    std::string name = in[i].first + "_" + std::to_string(i);
    declareVar(block, name, in[i].second.dtype(), in[i].second.dims());
    inputs.get(name) = in[i].second.clone();
    auto slot = llvm::find_if(inSlots, [&](const auto &s) { return s.first == in[i].first; });
    if (slot == inSlots.end()) // a slot named again: its next input (a duplicable slot)
      inSlots.push_back({in[i].first, {name}});
    else
      slot->second.push_back(name);
    names.push_back(name);
  }
  for (const std::string &slot : outSlots)
    outs.push_back({slot, {"out_" + slot}});
  proto::Op op = makeOp(type, inSlots, outs, attrs);
  Scope probe;
  for (const std::string &n : names)
    probe.get(n) = inputs.find(n)->clone();
  REQUIRE_OK(Executor().runOp(op, probe, type));
  for (const std::string &slot : outSlots) {
    const Tensor *t = probe.find("out_" + slot);
    if (t && t->initialized())
      declareVar(block, "out_" + slot, t->dtype(), t->dims());
  }
  *block.add_ops() = op;
  runOnBoth(m.main(), inputs, names, 1e-5, 1e-6, type);
}

static Tensor uniform(std::vector<int64_t> dims, uint64_t seed, double lo = -1, double hi = 1) {
  return asF32(randomTensor(dims, seed, lo, hi));
}

static Tensor scalar(float v) { return Tensor::fromVector<float>({1}, {v}); }

TEST_CASE("the CUDA optimizer, fill, metric and layout kernels match the CPU's", "[cuda]") {
  if (!gpuVisible())
    return;
  Tensor p = uniform({6, 4}, 1), g = uniform({6, 4}, 2), m1 = uniform({6, 4}, 3, 0, 1);
  compareOneOp("sgd", {{"Param", p}, {"Grad", g}, {"LearningRate", scalar(0.1f)}}, {"ParamOut"},
               {});
  compareOneOp("momentum",
               {{"Param", p}, {"Grad", g}, {"Velocity", m1}, {"LearningRate", scalar(0.1f)}},
               {"ParamOut", "VelocityOut"}, {{"mu", 0.9f}, {"use_nesterov", true}});
  compareOneOp("adam",
               {{"Param", p},
                {"Grad", g},
                {"Moment1", m1},
                {"Moment2", uniform({6, 4}, 4, 0, 1)},
                {"LearningRate", scalar(0.01f)},
                {"Beta1Pow", scalar(0.9f)},
                {"Beta2Pow", scalar(0.999f)}},
               {"ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"},
               {{"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f}});
  compareOneOp("adagrad",
               {{"Param", p}, {"Grad", g}, {"Moment", m1}, {"LearningRate", scalar(0.1f)}},
               {"ParamOut", "MomentOut"}, {{"epsilon", 1e-6f}});
  for (const char *random : {"uniform_random", "gaussian_random"})
    compareOneOp(random, {}, {"Out"},
                 {{"shape", std::vector<int64_t>{5, 7}}, {"seed", int64_t(11)}});
  compareOneOp("fill_constant", {}, {"Out"},
               {{"shape", std::vector<int64_t>{3, 2}}, {"value", 2.5f}});
  compareOneOp("fill_zeros_like", {{"X", p}}, {"Out"}, {});
  Tensor labels = Tensor::fromVector<int64_t>({6, 1}, {0, 3, 1, 2, 3, 0});
  compareOneOp("accuracy", {{"Out", uniform({6, 4}, 5)}, {"Label", labels}}, {"Accuracy"}, {});
  compareOneOp("bucketize", {{"X", uniform({5, 3}, 6, -3, 3)}}, {"Out"},
               {{"boundaries", std::vector<float>{-2, -0.5f, 0, 1.25f}}});
  compareOneOp("feature_key",
               {{"X", Tensor::fromVector<int64_t>(
                          {6}, {0, 7, -12, 1234567890123, INT64_MAX, INT64_MIN})}},
               {"Out"}, {{"column", std::string("user")}});
  compareOneOp("feature_cross",
               {{"X", Tensor::fromVector<int64_t>({2, 3}, {5, 0, INT64_MAX, 7, -3, 12})},
                {"X", Tensor::fromVector<int64_t>({2, 1}, {99, 1234567890123})}},
               {"Out"}, {{"column", std::string("recent*cat")}});
  compareOneOp("id_mod", {{"X", Tensor::fromVector<int64_t>({4, 1}, {7, 12, 5, 0})}}, {"Out"},
               {{"num_buckets", int64_t(5)}});
  compareOneOp("transpose", {{"X", Tensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}},
               {"Out"}, {{"axis", std::vector<int64_t>{1, 0}}});
}

/// Ops whose kernels talk to pservers or keep host-side tables: they run on the CPU in a GPU
/// trainer, their inputs copied to the host by the executor (docs/cuda.md).
static const char *const kHostOnlyOps[] = {
    "send",
    "recv",
    "send_barrier",
    "fetch_barrier",
    "geo_sync",
    "listen_and_serv",
    "distributed_lookup_table",
    "distributed_push_sparse",
    "sparse_table",
    "lookup_sorted_table", // serving runs on the CPU
    "fc",                  // the predictor's fused layer: serving runs on the CPU
    "c_allreduce_avg",     // Gloo's all-reduce of host memory (NCCL for GPU trainers: not yet)
    "c_allreduce_start",   // a gradient bucket's all-reduce, of host memory too
    "c_allreduce_wait",
};

TEST_CASE("with the CUDA kernels built, every op with a CPU kernel has a CUDA kernel of the same "
          "dtypes, or is one of the host-only ops",
          "[cuda][ops]") {
  if (!cudaKernelsLoaded())
    return;
  for (const ops::OpSchema *s : ops::allOps()) {
    if (llvm::is_contained(kHostOnlyOps, llvm::StringRef(s->type())))
      continue;
    for (DType t : {proto::F32, proto::F64, proto::I32, proto::I64}) {
      INFO("op " << s->type() << " " << dtypeName(t).str());
      CHECK(hasKernel(s->type(), Device::Cpu, t) == hasKernel(s->type(), Device::Cuda, t));
    }
  }
}

TEST_CASE("oar-executor ends with one line when --device names a device it cannot use",
          "[cuda][tools]") {
  std::string dir = scratchDir("cuda_device_errors");
  makeFitALine(dir + "/model", "--epochs=1");
  std::string out;
  int status = runCommand(binDir() + "/oar-executor --main " + dir + "/model/main.pb --startup " +
                              dir + "/model/startup.pb --device=tpu:0",
                          out);
  CHECK(status != 0);
  CHECK(out.find("--device: device \"tpu:0\" is not one of cpu, cuda, cuda:N") !=
        std::string::npos);
  // cuda:7: no machine running this suite has eight GPUs.
  status = runCommand(binDir() + "/oar-executor --main " + dir + "/model/main.pb --startup " +
                          dir + "/model/startup.pb --device=cuda:7",
                      out);
  CHECK(status != 0);
  INFO(out);
  CHECK(out.find("oar-executor: error: device cuda:7: ") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), '\n') == 1);
}

TEST_CASE("a trainer on the GPU with a pserver on the CPU trains as the CPU job does",
          "[cuda][e2e]") {
  if (!gpuVisible())
    return;
  std::string dir = scratchDir("cuda_e2e");
  makeFitALine(dir + "/model", "--epochs=3");
  for (const char *device : {"cpu", "cuda"})
    run(binDir() + "/oar-launch --server-num=1 --worker-num=1 --mode=sync --timeout=300 " +
        "--device=" + device + " --save " + dir + "/" + device + " " + dir + "/model");
  int compared = 0;
  for (const char *param : {"fc_0.w_0", "fc_0.b_0"}) {
    INFO(param);
    Tensor cpu = requireValue(readNpy(dir + "/cpu/" + param + ".npy"));
    Tensor gpu = requireValue(readNpy(dir + "/cuda/" + param + ".npy"));
    CHECK(toleranceRatio(gpu, cpu, 1e-4, 1e-5) <= 1.0);
    ++compared;
  }
  CHECK(compared == 2);
}
