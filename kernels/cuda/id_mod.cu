// CUDA kernel of id_mod.
#include "ir/error.h"
#include "kernels/cuda/cuda_util.h"

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

/// Copies one word from the device once the stream's work is done.
template <typename W> llvm::Error readBack(W &host, const W *dev, llvm::StringRef what) {
  if (auto err =
          check(cudaMemcpyAsync(&host, dev, sizeof host, cudaMemcpyDeviceToHost, stream()), what))
    return err;
  return check(cudaStreamSynchronize(stream()), what);
}

} // namespace

static llvm::Error idMod(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  int64_t buckets = ctx.attrs().getInt("num_buckets"), n = x.numel();
  const int64_t *in = x.data<int64_t>();
  auto *flag = static_cast<unsigned long long *>(scratch(sizeof(unsigned long long)));
  if (!flag)
    return makeError("id_mod: cannot allocate device scratch for the key check");
  cudaMemsetAsync(flag, 0xff, sizeof *flag, stream()); // all ones: no negative key yet
  OAR_CUDA_LAUNCH(idModElems, n, in, ctx.output("Out").data<int64_t>(), n, buckets, flag);
  if (auto err = launched("id_mod"))
    return err;
  // The error must come from this call, so wait for the flag.
  unsigned long long first = 0;
  if (auto err = readBack(first, flag, "id_mod"))
    return err;
  if (first == ~0ull)
    return llvm::Error::success();
  int64_t pos = static_cast<int64_t>(first), key = 0;
  if (auto err = readBack(key, in + pos, "id_mod"))
    return err;
  return makeError("{0}: key {1} at position {2} is negative", ctx.describeInput("X"), key, pos);
}
OAR_KERNEL(id_mod, Device::Cuda, proto::I64, idMod);

} // namespace oar::cuda
