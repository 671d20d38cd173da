// CUDA kernels of batch_norm, layer_norm and their gradients: the CPU's formulas in double, a
// channel's or row's sums over one block along a fixed tree (layer_norm's Scale/Bias: CPU order).
#include <algorithm>

#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

namespace {

/// Sums each thread's `a` and `b` over the block along a fixed tree, so the totals do not depend
/// on timing; every thread gets them. All threads of the block call it; blockDim is kThreads.
__device__ void blockSums(double &a, double &b) {
  __shared__ double partA[kThreads], partB[kThreads];
  __syncthreads(); // every thread has read the previous call's totals
  partA[threadIdx.x] = a;
  partB[threadIdx.x] = b;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      partA[threadIdx.x] += partA[threadIdx.x + w];
      partB[threadIdx.x] += partB[threadIdx.x + w];
    }
    __syncthreads();
  }
  a = partA[0];
  b = partB[0];
}

__device__ double blockSum(double a) {
  double unused = 0;
  blockSums(a, unused);
  return a;
}

/// Blocks for a loop of one block per channel or row.
unsigned blocksOf(int64_t n) { return static_cast<unsigned>(std::clamp<int64_t>(n, 1, 4096)); }

/// X as [n, channels, inner]: batch_norm's statistics run over n and inner.
struct ChannelShape {
  int64_t n, channels, inner;
  __host__ __device__ int64_t count() const { return n * inner; }
  /// The offset in X of element t of channel c, t running over (batch, inner) in row-major order.
  __device__ int64_t at(int64_t c, int64_t t) const {
    return (t / inner * channels + c) * inner + t % inner;
  }
};

ChannelShape channelShape(const Tensor &x) {
  int64_t inner = 1;
  for (size_t d = 2; d < x.rank(); ++d)
    inner *= x.dim(d);
  return {x.dim(0), x.dim(1), inner};
}

template <typename T> struct BatchNormArgs {
  const T *x, *scale, *bias, *mean, *var;
  T *y, *meanOut, *varOut, *saved, *savedInv;
  double eps, momentum;
  bool isTest;
  ChannelShape s;
};

// One block per channel. MeanOut and VarianceOut are normally Mean and Variance: every thread
// reads them before the block's thread 0 writes them.
template <typename T> __global__ void batchNormKernel(BatchNormArgs<T> a) {
  const int64_t count = a.s.count();
  for (int64_t c = blockIdx.x; c < a.s.channels; c += gridDim.x) {
    const double running = a.mean[c], runningVar = a.var[c];
    double mean = running, var = runningVar, unbiased = 0;
    if (!a.isTest) {
      double sum = 0, sq = 0;
      for (int64_t t = threadIdx.x; t < count; t += blockDim.x)
        sum += a.x[a.s.at(c, t)];
      mean = blockSum(sum) / double(count);
      for (int64_t t = threadIdx.x; t < count; t += blockDim.x) {
        double d = a.x[a.s.at(c, t)] - mean;
        sq += d * d;
      }
      sq = blockSum(sq);
      var = sq / double(count);
      unbiased = count > 1 ? sq / double(count - 1) : var;
    }
    __syncthreads(); // Mean and Variance are read
    const double inv = 1 / sqrt(var + a.eps);
    if (threadIdx.x == 0) {
      if (!a.isTest) {
        a.meanOut[c] = T(a.momentum * running + (1 - a.momentum) * mean);
        a.varOut[c] = T(a.momentum * runningVar + (1 - a.momentum) * unbiased);
      } else {
        a.meanOut[c] = T(running);
        a.varOut[c] = T(runningVar);
      }
      a.saved[c] = T(mean);
      a.savedInv[c] = T(inv);
    }
    for (int64_t t = threadIdx.x; t < count; t += blockDim.x) {
      const int64_t i = a.s.at(c, t);
      a.y[i] = T((a.x[i] - mean) * inv * a.scale[c] + a.bias[c]);
    }
  }
}

template <typename T> struct BatchNormGradArgs {
  const T *x, *scale, *mean, *inv, *dy;
  T *dx, *dScale, *dBias; // nullptr: not wanted
  ChannelShape s;
};

// One block per channel. With xhat = (x - mean) * inv and M elements a channel: dBias = sum dy,
// dScale = sum dy * xhat, dX = scale * inv / M * (M * dy - dBias - xhat * dScale).
template <typename T> __global__ void batchNormGradKernel(BatchNormGradArgs<T> a) {
  const double count = double(a.s.count());
  for (int64_t c = blockIdx.x; c < a.s.channels; c += gridDim.x) {
    const T mc = a.mean[c], ic = a.inv[c];
    double sumDy = 0, sumDyXhat = 0;
    for (int64_t t = threadIdx.x; t < a.s.count(); t += blockDim.x) {
      const int64_t i = a.s.at(c, t);
      sumDy += a.dy[i];
      const T dyXhat = a.dy[i] * (a.x[i] - mc) * ic; // in T, as on the CPU
      sumDyXhat += dyXhat;
    }
    blockSums(sumDy, sumDyXhat);
    if (threadIdx.x == 0) {
      if (a.dBias)
        a.dBias[c] = T(sumDy);
      if (a.dScale)
        a.dScale[c] = T(sumDyXhat);
    }
    if (!a.dx)
      continue;
    const double k0 = double(a.scale[c]) * ic / count;
    for (int64_t t = threadIdx.x; t < a.s.count(); t += blockDim.x) {
      const int64_t i = a.s.at(c, t);
      const double xhat = (a.x[i] - mc) * double(ic);
      a.dx[i] = T(k0 * (count * a.dy[i] - sumDy - xhat * sumDyXhat));
    }
  }
}

/// X as [rows, width]: layer_norm's statistics run over each row.
struct RowShape {
  int64_t rows, width;
};

RowShape rowShape(const Tensor &x) {
  const int64_t width = x.dim(x.rank() - 1);
  return {x.numel() / std::max<int64_t>(width, 1), width};
}

// One block per row.
template <typename T>
__global__ void layerNormKernel(const T *x, const T *scale, const T *bias, double eps, RowShape s,
                                T *y, T *meanOut, T *invOut) {
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const T *xr = x + r * s.width;
    double sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < s.width; j += blockDim.x)
      sum += xr[j];
    const double mean = blockSum(sum) / double(s.width);
    for (int64_t j = threadIdx.x; j < s.width; j += blockDim.x)
      sq += (xr[j] - mean) * (xr[j] - mean);
    const double inv = 1 / sqrt(blockSum(sq) / double(s.width) + eps);
    if (threadIdx.x == 0) {
      meanOut[r] = T(mean);
      invOut[r] = T(inv);
    }
    for (int64_t j = threadIdx.x; j < s.width; j += blockDim.x)
      y[r * s.width + j] = T((xr[j] - mean) * inv * scale[j] + bias[j]);
  }
}

// One block per row, with g = dy * scale and D features:
// dX = inv * (g - mean(g) - xhat * mean(g * xhat)).
template <typename T>
__global__ void layerNormGradXKernel(const T *x, const T *scale, const T *mean, const T *inv,
                                     const T *dy, RowShape s, T *dx) {
  const double width = double(s.width);
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const T *xr = x + r * s.width, *dyr = dy + r * s.width;
    const T mr = mean[r], ir = inv[r];
    double sumG = 0, sumGXhat = 0;
    for (int64_t j = threadIdx.x; j < s.width; j += blockDim.x) {
      double xhat = (xr[j] - mr) * double(ir);
      double g = double(dyr[j]) * scale[j];
      sumG += g;
      sumGXhat += g * xhat;
    }
    blockSums(sumG, sumGXhat);
    for (int64_t j = threadIdx.x; j < s.width; j += blockDim.x) {
      double xhat = (xr[j] - mr) * double(ir);
      double g = double(dyr[j]) * scale[j];
      dx[r * s.width + j] = T(ir * (g - sumG / width - xhat * sumGXhat / width));
    }
  }
}

// One thread per feature j, adding the rows in order as the CPU does: dScale = sum dy * xhat,
// dBias = sum dy.
template <typename T>
__global__ void layerNormGradScaleKernel(const T *x, const T *mean, const T *inv, const T *dy,
                                         RowShape s, T *dScale, T *dBias) {
  OAR_CUDA_LOOP(j, s.width) {
    double ds = 0, db = 0;
    for (int64_t r = 0; r < s.rows; ++r) {
      const int64_t i = r * s.width + j;
      double xhat = (x[i] - mean[r]) * double(inv[r]);
      ds += dy[i] * xhat;
      db += dy[i];
    }
    if (dScale)
      dScale[j] = T(ds);
    if (dBias)
      dBias[j] = T(db);
  }
}

} // namespace

template <typename T> static llvm::Error batchNorm(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  BatchNormArgs<T> a{x.data<T>(),
                     ctx.input("Scale").data<T>(),
                     ctx.input("Bias").data<T>(),
                     ctx.input("Mean").data<T>(),
                     ctx.input("Variance").data<T>(),
                     ctx.output("Y").data<T>(),
                     ctx.output("MeanOut").data<T>(),
                     ctx.output("VarianceOut").data<T>(),
                     ctx.output("SavedMean").data<T>(),
                     ctx.output("SavedInvStd").data<T>(),
                     ctx.attrs().getFloat("epsilon"),
                     ctx.attrs().getFloat("momentum"),
                     ctx.attrs().getBool("is_test"),
                     channelShape(x)};
  batchNormKernel<T><<<blocksOf(a.s.channels), kThreads, 0, stream()>>>(a);
  return launched("batch_norm");
}
OAR_CUDA_FLOAT_KERNELS(batch_norm, batchNorm);

template <typename T> static llvm::Error batchNormGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  BatchNormGradArgs<T> a{x.data<T>(),
                         ctx.input("Scale").data<T>(),
                         ctx.input("SavedMean").data<T>(),
                         ctx.input("SavedInvStd").data<T>(),
                         ctx.input("Y@GRAD").data<T>(),
                         ctx.hasOutput("X@GRAD") ? ctx.output("X@GRAD").data<T>() : nullptr,
                         ctx.hasOutput("Scale@GRAD") ? ctx.output("Scale@GRAD").data<T>() : nullptr,
                         ctx.hasOutput("Bias@GRAD") ? ctx.output("Bias@GRAD").data<T>() : nullptr,
                         channelShape(x)};
  if (!a.dx && !a.dScale && !a.dBias)
    return llvm::Error::success();
  batchNormGradKernel<T><<<blocksOf(a.s.channels), kThreads, 0, stream()>>>(a);
  return launched("batch_norm_grad");
}
OAR_CUDA_FLOAT_KERNELS(batch_norm_grad, batchNormGrad);

template <typename T> static llvm::Error layerNorm(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const RowShape s = rowShape(x);
  layerNormKernel<T><<<blocksOf(s.rows), kThreads, 0, stream()>>>(
      x.data<T>(), ctx.input("Scale").data<T>(), ctx.input("Bias").data<T>(),
      ctx.attrs().getFloat("epsilon"), s, ctx.output("Y").data<T>(), ctx.output("Mean").data<T>(),
      ctx.output("InvStd").data<T>());
  return launched("layer_norm");
}
OAR_CUDA_FLOAT_KERNELS(layer_norm, layerNorm);

template <typename T> static llvm::Error layerNormGrad(KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  const RowShape s = rowShape(x);
  const T *xv = x.data<T>(), *mean = ctx.input("Mean").data<T>(),
          *inv = ctx.input("InvStd").data<T>(), *dy = ctx.input("Y@GRAD").data<T>();
  if (ctx.hasOutput("X@GRAD"))
    layerNormGradXKernel<T><<<blocksOf(s.rows), kThreads, 0, stream()>>>(
        xv, ctx.input("Scale").data<T>(), mean, inv, dy, s, ctx.output("X@GRAD").data<T>());
  T *dScale = ctx.hasOutput("Scale@GRAD") ? ctx.output("Scale@GRAD").data<T>() : nullptr;
  T *dBias = ctx.hasOutput("Bias@GRAD") ? ctx.output("Bias@GRAD").data<T>() : nullptr;
  if (dScale || dBias)
    OAR_CUDA_LAUNCH(layerNormGradScaleKernel<T>, s.width, xv, mean, inv, dy, s, dScale, dBias);
  return launched("layer_norm_grad");
}
OAR_CUDA_FLOAT_KERNELS(layer_norm_grad, layerNormGrad);

} // namespace oar::cuda
