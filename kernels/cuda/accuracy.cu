// CUDA kernel of accuracy.
#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

namespace {

// One block: each thread takes rows in turn, and the block adds up the hits along a fixed tree.
template <typename T>
__global__ void accuracyBlock(const T *scores, const int64_t *labels, T *acc, int64_t rows,
                              int64_t c) {
  __shared__ int64_t part[kThreads];
  int64_t correct = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    const T *row = scores + r * c;
    int64_t best = 0; // the first maximum, like std::max_element
    for (int64_t j = 1; j < c; ++j)
      if (row[best] < row[j])
        best = j;
    correct += best == labels[r];
  }
  part[threadIdx.x] = correct;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w)
      part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    acc[0] = rows ? T(part[0]) / T(rows) : T(0);
}

} // namespace

template <typename T> static llvm::Error accuracy(KernelContext &ctx) {
  const Tensor &scores = ctx.input("Out");
  accuracyBlock<T><<<1, kThreads, 0, stream()>>>(
      scores.data<T>(), ctx.input("Label").data<int64_t>(), ctx.output("Accuracy").data<T>(),
      scores.dim(0), scores.dim(1));
  return launched("accuracy");
}
OAR_CUDA_FLOAT_KERNELS(accuracy, accuracy);

} // namespace oar::cuda
