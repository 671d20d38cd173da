// CUDA kernels of scale and sum (dense, selected rows, or a mix). Row ids of selected rows live
// on the host; their values on the GPU.
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

template <typename T> __global__ void scaleKernel(const T *x, T *out, T s, T b, int64_t n) {
  OAR_CUDA_LOOP(i, n) { out[i] = s * x[i] + b; }
}

template <typename T> static llvm::Error scale(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  T s = static_cast<T>(ctx.attrs().getFloat("scale")),
    b = static_cast<T>(ctx.attrs().getFloat("bias"));
  OAR_CUDA_LAUNCH(scaleKernel<T>, x.numel(), x.data<T>(), ctx.output("Out").data<T>(), s, b,
                  x.numel());
  return launched("scale");
}
OAR_CUDA_FLOAT_KERNELS(scale, scale);

template <typename T> __global__ void addKernel(T *acc, const T *x, int64_t n) {
  OAR_CUDA_LOOP(i, n) { acc[i] += x[i]; }
}

// acc[ids[k]] += values[k], rows in order: one thread per column keeps the CPU's order.
template <typename T>
__global__ void addRowsKernel(T *acc, const int64_t *ids, const T *values, int64_t count,
                              int64_t width) {
  OAR_CUDA_LOOP(c, width) {
    for (int64_t k = 0; k < count; ++k)
      acc[ids[k] * width + c] += values[k * width + c];
  }
}

// All inputs selected rows: Out gets their rows one after another (duplicates kept).
template <typename T>
static llvm::Error concatRows(KernelContext &ctx, llvm::ArrayRef<const SelectedRows *> in) {
  SelectedRows out;
  out.height = in[0]->height;
  int64_t total = 0;
  for (const SelectedRows *sr : in)
    total += static_cast<int64_t>(sr->rows.size());
  llvm::SmallVector<int64_t, 4> dims(in[0]->values.dims().begin(), in[0]->values.dims().end());
  dims[0] = total;
  out.values.resize(dtypeOf<T>(), dims, /*zero=*/false, Device::Cuda);
  size_t offset = 0;
  for (const SelectedRows *sr : in) {
    out.rows.insert(out.rows.end(), sr->rows.begin(), sr->rows.end());
    cudaMemcpyAsync(static_cast<std::byte *>(out.values.raw()) + offset, sr->values.raw(),
                    sr->values.bytes(), cudaMemcpyDeviceToDevice, stream());
    offset += sr->values.bytes();
  }
  ctx.outputRows("Out") = std::move(out); // Out may be one of the inputs: replaced at the end
  return launched("sum");
}

// Sums with selected rows among the inputs: all sparse concatenates their rows; a mix adds
// every input, in order, into a dense Out.
template <typename T> static llvm::Error sumWithRows(KernelContext &ctx) {
  const size_t n = ctx.inputCount("X");
  std::vector<const SelectedRows *> sparse;
  for (size_t i = 0; i < n; ++i)
    if (ctx.inputIsRows("X", i)) {
      sparse.push_back(&ctx.inputRows("X", i));
      if (llvm::Error err = checkRows(*sparse.back(), ctx.describeInput("X", i)))
        return err;
    }
  if (sparse.size() == n)
    return concatRows<T>(ctx, sparse);
  Tensor acc;
  acc.resize(dtypeOf<T>(), ctx.output("Out").dims(), /*zero=*/true, Device::Cuda);
  for (size_t i = 0; i < n; ++i) {
    if (!ctx.inputIsRows("X", i)) {
      OAR_CUDA_LAUNCH(addKernel<T>, acc.numel(), acc.data<T>(), ctx.input("X", i).data<T>(),
                      acc.numel());
      continue;
    }
    const SelectedRows &sr = ctx.inputRows("X", i);
    if (sr.rows.empty())
      continue;
    const int64_t count = static_cast<int64_t>(sr.rows.size());
    const int64_t *ids = idsOnDevice(sr.rows.data(), count);
    if (!ids)
      return makeError("sum: no GPU memory for {0} row ids", count);
    OAR_CUDA_LAUNCH(addRowsKernel<T>, sr.rowWidth(), acc.data<T>(), ids, sr.values.data<T>(),
                    count, sr.rowWidth());
  }
  Tensor &out = ctx.output("Out");
  cudaMemcpyAsync(out.raw(), acc.raw(), acc.bytes(), cudaMemcpyDeviceToDevice, stream());
  return launched("sum");
}

// Out may be one of the inputs (in-place accumulation), so sum into a temporary first.
template <typename T> static llvm::Error sum(KernelContext &ctx) {
  for (size_t i = 0; i < ctx.inputCount("X"); ++i)
    if (ctx.inputIsRows("X", i))
      return sumWithRows<T>(ctx);
  Tensor acc = ctx.input("X", 0).clone();
  for (size_t i = 1; i < ctx.inputCount("X"); ++i)
    OAR_CUDA_LAUNCH(addKernel<T>, acc.numel(), acc.data<T>(), ctx.input("X", i).data<T>(),
                    acc.numel());
  Tensor &out = ctx.output("Out");
  cudaMemcpyAsync(out.raw(), acc.raw(), acc.bytes(), cudaMemcpyDeviceToDevice, stream());
  return launched("sum");
}
OAR_CUDA_FLOAT_KERNELS(sum, sum);

} // namespace oar::cuda
