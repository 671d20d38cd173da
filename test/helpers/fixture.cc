// Fixture loading.
#include "test/helpers/fixture.h"

#include <oneapi/dnnl/dnnl.h>

#include <cstring>

#include "executor/npy.h"
#include "test/helpers/expect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

std::string fixturesDir() { return sourceDir() + "/test/fixtures"; }

std::vector<std::string> fixtureNames() {
  std::vector<std::string> names;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(fixturesDir(), ec), end; it != end && !ec;
       it.increment(ec))
    if (llvm::sys::fs::exists(it->path() + "/fixture.json")) // not other data kept beside them
      names.push_back(llvm::sys::path::filename(it->path()).str());
  std::sort(names.begin(), names.end());
  return names;
}

Fixture loadFixture(const std::string &name) {
  Fixture f;
  f.dir = fixturesDir() + "/" + name;
  auto buf = llvm::MemoryBuffer::getFile(f.dir + "/fixture.json");
  REQUIRE(buf);
  auto json = requireValue(llvm::json::parse((*buf)->getBuffer()));
  const llvm::json::Object &o = *json.getAsObject();
  oar::RecipeSpec &s = f.spec;
  s.model = o.getString("model")->str();
  s.in = *o.getInteger("in");
  s.out = *o.getInteger("out");
  s.loss = o.getString("loss")->str();
  if (const llvm::json::Array *h = o.getArray("hidden"))
    for (const llvm::json::Value &v : *h)
      s.hidden.push_back(*v.getAsInteger());
  if (auto act = o.getString("act"))
    s.act = act->str();
  const llvm::json::Object &opt = *o.getObject("optimizer");
  s.optimizer = opt.getString("type")->str();
  s.lr = static_cast<float>(*opt.getNumber("lr"));
  if (auto m = opt.getNumber("momentum"))
    s.momentum = static_cast<float>(*m);
  if (auto b = opt.getNumber("beta1"))
    s.beta1 = static_cast<float>(*b);
  if (auto b = opt.getNumber("beta2"))
    s.beta2 = static_cast<float>(*b);
  if (auto e = opt.getNumber("epsilon"))
    s.epsilon = static_cast<float>(*e);
  // The training toolkit's keys (test/fixtures/README.md), passed on as oar-model's flags are.
  if (auto norm = o.getString("norm"))
    s.norm = norm->str();
  if (auto wd = o.getNumber("weight_decay")) {
    s.weightDecay = static_cast<float>(*wd);
    s.weightDecayGiven = true;
  }
  if (auto clip = o.getNumber("clip_global_norm"))
    s.clipGlobalNorm = static_cast<float>(*clip);
  if (const llvm::json::Object *l = o.getObject("lr_schedule")) {
    s.schedule.type = l->getString("type")->str();
    if (auto n = l->getInteger("decay_steps"))
      s.schedule.decaySteps = *n;
    if (auto r = l->getNumber("decay_rate"))
      s.schedule.decayRate = static_cast<float>(*r);
    if (auto w = l->getInteger("warmup_steps"))
      s.schedule.warmupSteps = *w;
  }
  s.batchSize = *o.getInteger("batch_size");
  s.epochs = *o.getInteger("epochs");
  s.format = "npy";
  s.data = {f.dir + "/x.npy", f.dir + "/y.npy"};
  f.steps = *o.getInteger("steps");
  for (const llvm::json::Value &v : *o.getArray("params"))
    f.params.push_back(v.getAsString()->str());
  oar::Tensor losses = requireValue(oar::readNpy(f.dir + "/losses.npy"));
  f.losses = losses.toVector<float>();
  return f;
}

double toleranceRatio(const oar::Tensor &a, const oar::Tensor &b, double rtol, double atol) {
  REQUIRE(a.numel() == b.numel());
  double worst = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = a.data<float>()[i], y = b.data<float>()[i];
    worst = std::max(worst, std::abs(x - y) / (atol + rtol * std::abs(y)));
  }
  return worst;
}

bool useReproducibleGemm() {
  static const bool pinned = dnnl_set_max_cpu_isa(dnnl_cpu_isa_avx) == dnnl_success;
  if (!pinned)
    WARN("oneDNN ran a GEMM before the fixture pinned its kernels: results depend on this CPU");
  return pinned;
}

bool sameBits(const oar::Tensor &a, const oar::Tensor &b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}
