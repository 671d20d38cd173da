// CPU kernel of id_mod.
#include "kernels/cpu/cpu_util.h"

namespace oar::cpu {

static llvm::Error idMod(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t buckets = ctx.attrs().getInt("num_buckets");
  const int64_t *in = x.data<int64_t>();
  int64_t *out = ctx.output("Out").data<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (in[i] < 0)
      return makeError("{0}: key {1} at position {2} is negative", ctx.describeInput("X"), in[i],
                       i);
    out[i] = in[i] % buckets;
  }
  return llvm::Error::success();
}
OAR_KERNEL(id_mod, Device::Cpu, proto::I64, idMod);

} // namespace oar::cpu
