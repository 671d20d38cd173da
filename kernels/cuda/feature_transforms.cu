// CUDA kernels of log1p, bucketize, feature_key and feature_cross. feature_key and feature_cross
// repeat feed/feature_key.h's hashes on the device (that is host code); the CUDA tests compare the
// two key by key.
#include "feed/feature_key.h"
#include "kernels/cuda/cuda_util.h"
#include "support/error.h"
#include "support/hash.h"

namespace oar::cuda {

namespace {

/// In double, then rounded, as the CPU kernel and the feeds compute it (log1pf can differ).
template <typename T> __global__ void log1pElems(const T *x, T *out, int64_t n) {
  OAR_CUDA_LOOP(i, n) {
    double v = static_cast<double>(x[i]);
    out[i] = static_cast<T>(copysign(log1p(fabs(v)), v));
  }
}

template <typename T> __global__ void log1pGradElems(const T *x, const T *dout, T *dx, int64_t n) {
  OAR_CUDA_LOOP(i, n) { dx[i] = dout[i] / (T(1) + fabs(x[i])); }
}

/// The first i with x < boundaries[i], else n (a binary search: upper_bound). A NaN is left out
/// and its position recorded in `flag`, the least one winning.
template <typename T>
__global__ void bucketizeElems(const T *x, int64_t *out, int64_t n, const float *boundaries,
                               int64_t count, unsigned long long *flag) {
  OAR_CUDA_LOOP(i, n) {
    T v = x[i];
    if (isnan(v)) {
      atomicMin(flag, static_cast<unsigned long long>(i));
      continue;
    }
    int64_t lo = 0, hi = count;
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (v < static_cast<T>(boundaries[mid]))
        hi = mid;
      else
        lo = mid + 1;
    }
    out[i] = lo;
  }
}

/// featureKeyFrom(column, decimal text of id): FNV-1a over the text, then splitmix64's finaliser.
__device__ uint64_t integerKey(uint64_t column, int64_t id) {
  char digits[20];
  int count = 0;
  // The magnitude as unsigned, so INT64_MIN has one too.
  uint64_t m = id < 0 ? 0 - static_cast<uint64_t>(id) : static_cast<uint64_t>(id);
  do {
    digits[count++] = static_cast<char>('0' + m % 10);
    m /= 10;
  } while (m);
  uint64_t h = column;
  if (id < 0)
    h = fnvByte(h, static_cast<uint8_t>('-'));
  while (count)
    h = fnvByte(h, static_cast<uint8_t>(digits[--count]));
  return mixKey(h) >> 1;
}

__global__ void featureKeyElems(const int64_t *x, int64_t *out, int64_t n, uint64_t column) {
  OAR_CUDA_LOOP(i, n) { out[i] = static_cast<int64_t>(integerKey(column, x[i])); }
}

constexpr int kMaxCrossInputs = 8;
/// feature_cross's inputs, passed by value: each one's keys and keys a row (1 or the cross's).
struct CrossInputs {
  const int64_t *x[kMaxCrossInputs];
  int64_t width[kMaxCrossInputs];
  int count;
};

/// crossKeyFrom (feed/feature_key.h) on the device: the keys mixed into the cross's hash in turn.
__global__ void featureCrossElems(CrossInputs in, int64_t *out, int64_t n, int64_t width,
                                  uint64_t column) {
  OAR_CUDA_LOOP(i, n) {
    int64_t r = i / width, k = i % width;
    uint64_t h = column;
    for (int j = 0; j < in.count; ++j) {
      int64_t w = in.width[j];
      uint64_t key = static_cast<uint64_t>(in.x[j][r * w + (w == 1 ? 0 : k)]);
      h = mixKey(h ^ (key + 0x9e3779b97f4a7c15ULL));
    }
    out[i] = static_cast<int64_t>(h >> 1);
  }
}

} // namespace

template <typename T> static llvm::Error log1pKernel(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(log1pElems<T>, x.numel(), x.data<T>(), ctx.output("Out").data<T>(), x.numel());
  return launched("log1p");
}

template <typename T> static llvm::Error log1pGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  OAR_CUDA_LAUNCH(log1pGradElems<T>, x.numel(), x.data<T>(), ctx.input("Out@GRAD").data<T>(),
                  ctx.output("X@GRAD").data<T>(), x.numel());
  return launched("log1p_grad");
}

template <typename T> static llvm::Error bucketize(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  std::vector<float> boundaries = ctx.attrs().getFloats("boundaries");
  // One scratch buffer holds the NaN flag, then the boundaries (scratch is one buffer per thread).
  size_t bytes = sizeof(unsigned long long) + boundaries.size() * sizeof(float);
  auto *buffer = static_cast<char *>(scratch(bytes));
  if (!buffer) {
    cudaGetLastError();
    return makeError("bucketize: cannot allocate device scratch for the boundaries");
  }
  auto *flag = reinterpret_cast<unsigned long long *>(buffer);
  auto *onDevice = reinterpret_cast<float *>(buffer + sizeof(unsigned long long));
  if (llvm::Error err = check(cudaMemsetAsync(flag, 0xff, sizeof *flag, stream()), "bucketize"))
    return err;
  if (!boundaries.empty()) {
    if (llvm::Error err = check(cudaMemcpyAsync(onDevice, boundaries.data(),
                                                boundaries.size() * sizeof(float),
                                                cudaMemcpyHostToDevice, stream()),
                                "bucketize"))
      return err;
  }
  OAR_CUDA_LAUNCH(bucketizeElems<T>, x.numel(), x.data<T>(), ctx.output("Out").data<int64_t>(),
                  x.numel(), onDevice, static_cast<int64_t>(boundaries.size()), flag);
  if (auto err = launched("bucketize"))
    return err;
  // Waits for the stream, so `boundaries` outlives the copy from it.
  auto bad = firstBadIndex(flag, "bucketize");
  if (!bad)
    return bad.takeError();
  if (*bad)
    return makeError("{0}: X at position {1} is NaN; it has no bucket", ctx.describeInput("X"),
                     **bad);
  return llvm::Error::success();
}

static llvm::Error featureKey(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  uint64_t column = columnHash(ctx.attrs().getString("column"));
  OAR_CUDA_LAUNCH(featureKeyElems, x.numel(), x.data<int64_t>(),
                  ctx.output("Out").data<int64_t>(), x.numel(), column);
  return launched("feature_key");
}

static llvm::Error featureCross(KernelContext &ctx) {
  Tensor &out = ctx.output("Out");
  int64_t rows = out.dims()[0], width = out.dims()[1];
  CrossInputs in{};
  in.count = static_cast<int>(ctx.inputCount("X"));
  if (in.count > kMaxCrossInputs)
    return makeError("feature_cross on the GPU crosses up to {0} columns, got {1}",
                     kMaxCrossInputs, in.count);
  for (int j = 0; j < in.count; ++j) {
    const Tensor &x = ctx.input("X", j);
    if (x.dims()[0] != rows || (x.dims()[1] != 1 && x.dims()[1] != width))
      return makeError("{0}: {1} rows of {2} keys; the cross has {3} rows of {4}",
                       ctx.describeInput("X"), x.dims()[0], x.dims()[1], rows, width);
    in.x[j] = x.data<int64_t>(), in.width[j] = x.dims()[1];
  }
  OAR_CUDA_LAUNCH(featureCrossElems, rows * width, in, out.data<int64_t>(), rows * width, width,
                  columnHash(ctx.attrs().getString("column")));
  return launched("feature_cross");
}

OAR_CUDA_FLOAT_KERNELS(log1p, log1pKernel);
OAR_CUDA_FLOAT_KERNELS(log1p_grad, log1pGrad);
OAR_CUDA_FLOAT_KERNELS(bucketize, bucketize);
OAR_KERNEL(feature_key, Device::Cuda, proto::I64, featureKey);
OAR_KERNEL(feature_cross, Device::Cuda, proto::I64, featureCross);

} // namespace oar::cuda
