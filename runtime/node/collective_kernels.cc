// CPU kernel of c_allreduce_avg: the mean of gradients over a collective job's trainers.
#include "executor/kernel.h"
#include "runtime/collective/collective_group.h"
#include "runtime/node/run_env.h"
#include "support/error.h"

namespace oar::runtime {

namespace {

/// The mean of every tensor of `grads` over the ranks, in place: one all-reduce a step,
/// whatever the number of params.
template <typename T>
llvm::Error averageInPlace(CollectiveGroup &group, std::vector<Tensor *> &grads) {
  std::vector<llvm::MutableArrayRef<T>> parts;
  for (Tensor *g : grads)
    parts.emplace_back(g->data<T>(), static_cast<size_t>(g->numel()));
  return group.allreduceMean(parts);
}

llvm::Error allreduceAvgKernel(KernelContext &ctx) {
  auto *env = static_cast<RunEnv *>(ctx.env());
  if (!env || !env->group)
    return makeError("c_allreduce_avg needs a collective job's trainers: run this program with "
                     "oar-executor as part of a collective job");
  if (ctx.attrs().getInt("ranks") != env->group->ranks())
    return makeError("the program averages over {0} trainers but the job has {1}",
                     ctx.attrs().getInt("ranks"), env->group->ranks());
  std::vector<std::string> names = opInputs(ctx.op(), "X");
  std::vector<Tensor *> grads;
  for (size_t i = 0; i < names.size(); ++i) {
    Tensor &g = ctx.scope().get(names[i]);
    if (g.device() != Device::Cpu)
      return makeError("{0} is in GPU memory; collective trainers all-reduce host memory only "
                       "(GPU trainers need NCCL, not built yet)",
                       ctx.describeInput("X", i));
    if (g.dtype() != proto::F32 && g.dtype() != proto::F64)
      return makeError("{0} is {1}; c_allreduce_avg averages float32 and float64 gradients",
                       ctx.describeInput("X", i), dtypeName(g.dtype()));
    if (!grads.empty() && g.dtype() != grads.front()->dtype())
      return makeError("{0} is {1} but {2} is {3}: one all-reduce takes one dtype",
                       ctx.describeInput("X", i), dtypeName(g.dtype()), ctx.describeInput("X", 0),
                       dtypeName(grads.front()->dtype()));
    grads.push_back(&g);
  }
  if (grads.empty())
    return llvm::Error::success();
  return grads.front()->dtype() == proto::F32 ? averageInPlace<float>(*env->group, grads)
                                              : averageInPlace<double>(*env->group, grads);
}

} // namespace

OAR_KERNEL(c_allreduce_avg, Device::Cpu, proto::F32, allreduceAvgKernel);
OAR_KERNEL(c_allreduce_avg, Device::Cpu, proto::F64, allreduceAvgKernel);

} // namespace oar::runtime
