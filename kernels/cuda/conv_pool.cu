// CUDA kernels of conv2d (direct), pool2d, and their gradients. NCHW layout.
#include <limits>

#include "kernels/cuda/cuda_util.h"
#include "kernels/kernel_shapes.h"
#include "support/error.h"

namespace oar::cuda {

// Products that nvcc may not fuse into an FMA: sums then round as the CPU's f64 loops do, in
// the same order, so f64 results match the CPU kernel bit for bit.
__device__ inline float mulRn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mulRn(double a, double b) { return __dmul_rn(a, b); }

using kernels::ConvGeom;
using kernels::convGeom;

/// One thread per output element: sum over (c, ki, kj) of Filter * Input, the CPU's order.
template <typename T>
__global__ void convForward(ConvGeom g, const T *in, const T *f, T *out, int64_t total) {
  OAR_CUDA_LOOP(e, total) {
    const int64_t x = e % g.ow, y = (e / g.ow) % g.oh, o = (e / (g.ow * g.oh)) % g.o,
                  n = e / (g.ow * g.oh * g.o);
    T acc = 0;
    for (int64_t c = 0; c < g.c; ++c)
      for (int64_t ki = 0; ki < g.kh; ++ki) {
        const int64_t iy = y * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.h)
          continue;
        for (int64_t kj = 0; kj < g.kw; ++kj) {
          const int64_t ix = x * g.sw - g.pw + kj * g.dw;
          if (ix >= 0 && ix < g.w)
            acc += mulRn(f[((o * g.c + c) * g.kh + ki) * g.kw + kj],
                         in[((n * g.c + c) * g.h + iy) * g.w + ix]);
        }
      }
    out[e] = acc;
  }
}

template <typename T> static llvm::Error conv2d(KernelContext &ctx) {
  ConvGeom g = convGeom(ctx);
  Tensor &out = ctx.output("Output");
  if (out.numel() == 0)
    return llvm::Error::success();
  OAR_CUDA_LAUNCH(convForward<T>, out.numel(), g, ctx.input("Input").data<T>(),
                  ctx.input("Filter").data<T>(), out.data<T>(), out.numel());
  return launched("conv2d");
}
OAR_CUDA_FLOAT_KERNELS(conv2d, conv2d);

/// One thread per input element: gathers, for each (ki, kj) in order, the one output position
/// whose window puts that tap on this pixel, summed over filters (what col2im adds there).
template <typename T>
__global__ void convInputGrad(ConvGeom g, const T *f, const T *dout, T *dIn, int64_t total) {
  OAR_CUDA_LOOP(e, total) {
    const int64_t ix = e % g.w, iy = (e / g.w) % g.h, c = (e / (g.w * g.h)) % g.c,
                  n = e / (g.w * g.h * g.c);
    T acc = 0;
    for (int64_t ki = 0; ki < g.kh; ++ki) {
      const int64_t ty = iy + g.ph - ki * g.dh; // = y * sh
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh)
        continue;
      const int64_t y = ty / g.sh;
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const int64_t tx = ix + g.pw - kj * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow)
          continue;
        const int64_t x = tx / g.sw;
        T col = 0; // dcol[(c, ki, kj), (y, x)] = sum over o of F * dOut
        for (int64_t o = 0; o < g.o; ++o)
          col += mulRn(f[((o * g.c + c) * g.kh + ki) * g.kw + kj],
                       dout[((n * g.o + o) * g.oh + y) * g.ow + x]);
        acc += col;
      }
    }
    dIn[e] = acc;
  }
}

/// One thread per filter element: per image the sum over output positions, then the images'
/// sums added in order (the CPU's GEMM with beta 1 after the first image).
template <typename T>
__global__ void convFilterGrad(ConvGeom g, const T *in, const T *dout, T *dF, int64_t total) {
  OAR_CUDA_LOOP(e, total) {
    const int64_t kj = e % g.kw, ki = (e / g.kw) % g.kh, c = (e / (g.kw * g.kh)) % g.c,
                  o = e / (g.kw * g.kh * g.c);
    T sum = 0;
    for (int64_t n = 0; n < g.n; ++n) {
      T acc = 0;
      for (int64_t y = 0; y < g.oh; ++y) {
        const int64_t iy = y * g.sh - g.ph + ki * g.dh;
        if (iy < 0 || iy >= g.h)
          continue;
        for (int64_t x = 0; x < g.ow; ++x) {
          const int64_t ix = x * g.sw - g.pw + kj * g.dw;
          if (ix >= 0 && ix < g.w)
            acc += mulRn(dout[((n * g.o + o) * g.oh + y) * g.ow + x],
                         in[((n * g.c + c) * g.h + iy) * g.w + ix]);
        }
      }
      sum = n == 0 ? acc : acc + sum;
    }
    dF[e] = sum;
  }
}

template <typename T> static llvm::Error conv2dGrad(KernelContext &ctx) {
  ConvGeom g = convGeom(ctx);
  const T *in = ctx.input("Input").data<T>(), *f = ctx.input("Filter").data<T>();
  const T *dout = ctx.input("Output@GRAD").data<T>();
  if (ctx.hasOutput("Filter@GRAD")) {
    Tensor &dF = ctx.output("Filter@GRAD");
    if (dF.numel())
      OAR_CUDA_LAUNCH(convFilterGrad<T>, dF.numel(), g, in, dout, dF.data<T>(), dF.numel());
  }
  if (ctx.hasOutput("Input@GRAD")) {
    Tensor &dIn = ctx.output("Input@GRAD");
    if (dIn.numel())
      OAR_CUDA_LAUNCH(convInputGrad<T>, dIn.numel(), g, f, dout, dIn.data<T>(), dIn.numel());
  }
  return launched("conv2d_grad");
}
OAR_CUDA_FLOAT_KERNELS(conv2d_grad, conv2dGrad);

using kernels::PoolGeom;
using kernels::poolGeom;

/// Output cell o's window, clipped to the image (padding is not counted in avg).
struct Window {
  int64_t plane, y0, y1, x0, x1;
  __device__ int64_t count() const { return (y1 - y0) * (x1 - x0); }
};
__device__ inline Window windowOf(const PoolGeom &g, int64_t o) {
  const int64_t x = o % g.ow, y = (o / g.ow) % g.oh, p = o / (g.ow * g.oh);
  Window win;
  win.plane = p;
  win.y0 = max(y * g.sh - g.ph, int64_t(0)), win.x0 = max(x * g.sw - g.pw, int64_t(0));
  win.y1 = min(y * g.sh - g.ph + g.kh, g.h), win.x1 = min(x * g.sw - g.pw + g.kw, g.w);
  return win;
}

/// One thread per output cell, visiting its window row-major as the CPU does. Max keeps the
/// first of equal values and skips NaNs (std::max(out, in)); `lowest` starts it.
template <typename T>
__global__ void poolForward(PoolGeom g, const T *in, T *out, int64_t total, T lowest) {
  OAR_CUDA_LOOP(o, total) {
    Window win = windowOf(g, o);
    const int64_t count = win.count();
    T acc = g.isMax ? lowest : T(0);
    for (int64_t iy = win.y0; iy < win.y1; ++iy)
      for (int64_t ix = win.x0; ix < win.x1; ++ix) {
        T v = in[(win.plane * g.h + iy) * g.w + ix];
        if (!g.isMax)
          acc = acc + v / T(count);
        else if (acc < v)
          acc = v;
      }
    out[o] = acc;
  }
}

template <typename T> static llvm::Error pool2d(KernelContext &ctx) {
  PoolGeom g = poolGeom(ctx);
  Tensor &out = ctx.output("Out");
  if (out.numel() == 0)
    return llvm::Error::success();
  OAR_CUDA_LAUNCH(poolForward<T>, out.numel(), g, ctx.input("X").data<T>(), out.data<T>(),
                  out.numel(), std::numeric_limits<T>::lowest());
  return launched("pool2d");
}
OAR_CUDA_FLOAT_KERNELS(pool2d, pool2d);

/// Max pooling's winner per output cell: the first input cell (row-major) equal to Out, as the
/// CPU picks; -1 when none is.
template <typename T>
__global__ void poolArgmax(PoolGeom g, const T *in, const T *out, int64_t *winner, int64_t total) {
  OAR_CUDA_LOOP(o, total) {
    Window win = windowOf(g, o);
    int64_t found = -1;
    for (int64_t iy = win.y0; iy < win.y1 && found < 0; ++iy)
      for (int64_t ix = win.x0; ix < win.x1; ++ix) {
        const int64_t i = (win.plane * g.h + iy) * g.w + ix;
        if (in[i] == out[o]) {
          found = i;
          break;
        }
      }
    winner[o] = found;
  }
}

/// One thread per input cell: adds the gradients of the output cells whose windows hold it, in
/// increasing output order (the CPU's order of += into it).
template <typename T>
__global__ void poolGrad(PoolGeom g, const T *dout, const int64_t *winner, T *dx, int64_t total) {
  OAR_CUDA_LOOP(i, total) {
    const int64_t ix = i % g.w, iy = (i / g.w) % g.h, p = i / (g.w * g.h);
    // Output rows y with y*sh - ph <= iy < y*sh - ph + kh; likewise columns.
    const int64_t ny = iy + g.ph - g.kh + 1, nx = ix + g.pw - g.kw + 1;
    const int64_t yLo = ny <= 0 ? 0 : (ny + g.sh - 1) / g.sh,
                  yHi = min((iy + g.ph) / g.sh, g.oh - 1);
    const int64_t xLo = nx <= 0 ? 0 : (nx + g.sw - 1) / g.sw,
                  xHi = min((ix + g.pw) / g.sw, g.ow - 1);
    T acc = 0;
    for (int64_t y = yLo; y <= yHi; ++y)
      for (int64_t x = xLo; x <= xHi; ++x) {
        const int64_t o = (p * g.oh + y) * g.ow + x;
        if (g.isMax) {
          if (winner[o] == i)
            acc += dout[o];
        } else {
          acc += dout[o] / T(windowOf(g, o).count());
        }
      }
    dx[i] = acc;
  }
}

// Max: the gradient goes to the first input cell equal to the max; avg: spread evenly.
template <typename T> static llvm::Error pool2dGrad(KernelContext &ctx) {
  PoolGeom g = poolGeom(ctx);
  const Tensor &out = ctx.input("Out");
  Tensor &dx = ctx.output("X@GRAD");
  if (dx.numel() == 0)
    return llvm::Error::success();
  int64_t *winner = nullptr;
  if (g.isMax && out.numel()) {
    winner = static_cast<int64_t *>(scratch(static_cast<size_t>(out.numel()) * sizeof(int64_t)));
    if (!winner)
      return makeError("pool2d_grad: no device memory for {0} max positions", out.numel());
    OAR_CUDA_LAUNCH(poolArgmax<T>, out.numel(), g, ctx.input("X").data<T>(), out.data<T>(), winner,
                    out.numel());
  }
  OAR_CUDA_LAUNCH(poolGrad<T>, dx.numel(), g, ctx.input("Out@GRAD").data<T>(), winner, dx.data<T>(),
                  dx.numel());
  return launched("pool2d_grad");
}
OAR_CUDA_FLOAT_KERNELS(pool2d_grad, pool2dGrad);

} // namespace oar::cuda
