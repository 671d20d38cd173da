// CPU kernels of c_allreduce_avg, c_allreduce_start and c_allreduce_wait: the mean of gradients
// over a collective or hybrid job's trainers, at once or in buckets on the collective's thread.
#include "executor/kernel.h"
#include "runtime/collective/background_allreduce.h"
#include "runtime/collective/collective_group.h"
#include "runtime/node/run_env.h"
#include "support/error.h"

namespace oar::runtime {

namespace {

/// The group of a collective or hybrid trainer, checked against the op's `ranks`.
llvm::Expected<RunEnv *> collectiveEnv(KernelContext &ctx) {
  auto *env = dynamic_cast<RunEnv *>(ctx.env());
  if (!env || !env->group)
    return makeError("{0} needs a collective job's trainers: run this program with oar-executor "
                     "as part of a collective or hybrid job",
                     ctx.op().type());
  if (ctx.attrs().getInt("ranks") != env->group->ranks())
    return makeError("the program averages over {0} trainers but the job has {1}",
                     ctx.attrs().getInt("ranks"), env->group->ranks());
  return env;
}

/// X's tensors, checked: host memory, float32 or float64, one dtype.
llvm::Expected<std::vector<Tensor *>> gradientsOf(KernelContext &ctx) {
  std::vector<std::string> names = opInputs(ctx.op(), "X");
  std::vector<Tensor *> grads;
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor &g = ctx.scope().get(names[i]);
    if (g.device() != Device::Cpu)
      return makeError("{0} is in GPU memory; collective trainers all-reduce host memory only "
                       "(GPU trainers need NCCL, not built yet)",
                       ctx.describeInput("X", i));
    if (g.dtype() != proto::F32 && g.dtype() != proto::F64)
      return makeError("{0} is {1}; {2} averages float32 and float64 gradients",
                       ctx.describeInput("X", i), dtypeName(g.dtype()), ctx.op().type());
    if (!grads.empty() && g.dtype() != grads.front()->dtype())
      return makeError("{0} is {1} but {2} is {3}: one all-reduce takes one dtype",
                       ctx.describeInput("X", i), dtypeName(g.dtype()), ctx.describeInput("X", 0),
                       dtypeName(grads.front()->dtype()));
    grads.push_back(&g);
  }
  return grads;
}

template <typename T> std::vector<llvm::MutableArrayRef<T>> partsOf(std::vector<Tensor *> &grads) {
  std::vector<llvm::MutableArrayRef<T>> parts;
  for (Tensor *g : grads)
    parts.emplace_back(g->data<T>(), static_cast<size_t>(g->numel()));
  return parts;
}

/// c_allreduce_avg: the mean of every gradient over the ranks, in place, now.
llvm::Error allreduceAvgKernel(KernelContext &ctx) {
  auto env = collectiveEnv(ctx);
  if (!env)
    return env.takeError();
  auto grads = gradientsOf(ctx);
  if (!grads)
    return grads.takeError();
  if (grads->empty())
    return llvm::Error::success();
  CollectiveGroup &group = *(*env)->group;
  return grads->front()->dtype() == proto::F32 ? group.allreduceMean(partsOf<float>(*grads))
                                               : group.allreduceMean(partsOf<double>(*grads));
}

/// c_allreduce_start: the bucket's mean, started on the collective's own thread.
llvm::Error allreduceStartKernel(KernelContext &ctx) {
  auto env = collectiveEnv(ctx);
  if (!env)
    return env.takeError();
  auto grads = gradientsOf(ctx);
  if (!grads)
    return grads.takeError();
  RunEnv &e = **env;
  if (!e.buckets)
    e.buckets = std::make_unique<BackgroundAllreduce>(*e.group, e.collectiveTimeout);
  int64_t bucket = ctx.attrs().getInt("bucket");
  if (!grads->empty() && grads->front()->dtype() == proto::F64)
    return e.buckets->start(bucket, partsOf<double>(*grads));
  return e.buckets->start(bucket, partsOf<float>(*grads));
}

/// c_allreduce_wait: the bucket's mean is in its gradients once this returns.
llvm::Error allreduceWaitKernel(KernelContext &ctx) {
  auto env = collectiveEnv(ctx);
  if (!env)
    return env.takeError();
  if (!(*env)->buckets)
    return makeError("gradient bucket {0} is waited for but no bucket was started",
                     ctx.attrs().getInt("bucket"));
  return (*env)->buckets->wait(ctx.attrs().getInt("bucket"));
}

} // namespace

OAR_KERNEL(c_allreduce_avg, Device::Cpu, proto::F32, allreduceAvgKernel);
OAR_KERNEL(c_allreduce_avg, Device::Cpu, proto::F64, allreduceAvgKernel);
OAR_KERNEL(c_allreduce_start, Device::Cpu, proto::F32, allreduceStartKernel);
OAR_KERNEL(c_allreduce_start, Device::Cpu, proto::F64, allreduceStartKernel);
OAR_KERNEL(c_allreduce_wait, Device::Cpu, proto::F32, allreduceWaitKernel);
OAR_KERNEL(c_allreduce_wait, Device::Cpu, proto::F64, allreduceWaitKernel);

} // namespace oar::runtime
