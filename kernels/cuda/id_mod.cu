// CUDA kernel of id_mod.
#include "kernels/cuda/cuda_util.h"
#include "support/error.h"

namespace oar::cuda {

namespace {

/// out = in % buckets; a negative key is left out and its position recorded in `flag` (the
/// least such position wins, so the host reports the first, as the CPU kernel does).
__global__ void idModElems(const int64_t *in, int64_t *out, int64_t n, int64_t buckets,
                           unsigned long long *flag) {
  OAR_CUDA_LOOP(i, n) {
    if (in[i] < 0)
      atomicMin(flag, static_cast<unsigned long long>(i));
    else
      out[i] = in[i] % buckets;
  }
}

} // namespace

static llvm::Error idMod(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t buckets = ctx.attrs().getInt("num_buckets"), n = x.numel();
  const int64_t *in = x.data<int64_t>();
  unsigned long long *flag = badIndexFlag();
  if (!flag)
    return makeError("id_mod: cannot allocate device scratch for the key check");
  OAR_CUDA_LAUNCH(idModElems, n, in, ctx.output("Out").data<int64_t>(), n, buckets, flag);
  if (auto err = launched("id_mod"))
    return err;
  auto bad = firstBadIndex(flag, "id_mod"); // the error must come from this call
  if (!bad)
    return bad.takeError();
  if (!*bad)
    return llvm::Error::success();
  int64_t pos = **bad, key = 0;
  if (auto err = copyToHost(&key, in + pos, sizeof key, "id_mod"))
    return err;
  return makeError("{0}: key {1} at position {2} is negative", ctx.describeInput("X"), key, pos);
}
OAR_KERNEL(id_mod, Device::Cuda, proto::I64, idMod);

} // namespace oar::cuda
