// CPU kernels of conv2d (im2col + oneDNN GEMM), pool2d, and their gradients. NCHW layout.
#include <limits>

#include "kernels/cpu/cpu_util.h"
#include "kernels/kernel_shapes.h"

namespace oar::cpu {

using kernels::ConvGeom;
using kernels::convGeom;

/// col[(c,ki,kj), (y,x)] = img[c, y*sh - ph + ki*dh, x*sw - pw + kj*dw] (0 outside).
template <typename T> static void im2col(const ConvGeom &g, const T *img, T *col) {
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        T *row = col + ((c * g.kh + ki) * g.kw + kj) * g.colCols();
        for (int64_t y = 0; y < g.oh; ++y) {
          int64_t iy = y * g.sh - g.ph + ki * g.dh;
          for (int64_t x = 0; x < g.ow; ++x) {
            int64_t ix = x * g.sw - g.pw + kj * g.dw;
            bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
            row[y * g.ow + x] = inside ? img[(c * g.h + iy) * g.w + ix] : T(0);
          }
        }
      }
}

/// The adjoint of im2col: adds each column entry back into the image.
template <typename T> static void col2im(const ConvGeom &g, const T *col, T *img) {
  std::fill_n(img, g.c * g.h * g.w, T(0));
  for (int64_t c = 0; c < g.c; ++c)
    for (int64_t ki = 0; ki < g.kh; ++ki)
      for (int64_t kj = 0; kj < g.kw; ++kj) {
        const T *row = col + ((c * g.kh + ki) * g.kw + kj) * g.colCols();
        for (int64_t y = 0; y < g.oh; ++y) {
          int64_t iy = y * g.sh - g.ph + ki * g.dh;
          if (iy < 0 || iy >= g.h)
            continue;
          for (int64_t x = 0; x < g.ow; ++x) {
            int64_t ix = x * g.sw - g.pw + kj * g.dw;
            if (ix >= 0 && ix < g.w)
              img[(c * g.h + iy) * g.w + ix] += row[y * g.ow + x];
          }
        }
      }
}

template <typename T> static llvm::Error conv2d(KernelContext &ctx) {
  ConvGeom g = convGeom(ctx);
  std::vector<T> col(g.colRows() * g.colCols());
  const T *in = ctx.input("Input").data<T>(), *f = ctx.input("Filter").data<T>();
  T *out = ctx.output("Output").data<T>();
  for (int64_t i = 0; i < g.n; ++i) {
    im2col(g, in + i * g.c * g.h * g.w, col.data());
    // out[i] [O, oh*ow] = Filter [O, C*kh*kw] * col
    gemm(false, false, g.o, g.colCols(), g.colRows(), T(1), f, g.colRows(), col.data(), g.colCols(),
         T(0), out + i * g.o * g.colCols(), g.colCols());
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(conv2d, conv2d);

template <typename T> static llvm::Error conv2dGrad(KernelContext &ctx) {
  ConvGeom g = convGeom(ctx);
  std::vector<T> col(g.colRows() * g.colCols());
  const T *in = ctx.input("Input").data<T>(), *f = ctx.input("Filter").data<T>();
  const T *dout = ctx.input("Output@GRAD").data<T>();
  T *dIn = ctx.hasOutput("Input@GRAD") ? ctx.output("Input@GRAD").data<T>() : nullptr;
  T *dF = ctx.hasOutput("Filter@GRAD") ? ctx.output("Filter@GRAD").data<T>() : nullptr;
  for (int64_t i = 0; i < g.n; ++i) {
    const T *dOutI = dout + i * g.o * g.colCols();
    if (dF) { // dF += dOut[i] * col^T
      im2col(g, in + i * g.c * g.h * g.w, col.data());
      gemm(false, true, g.o, g.colRows(), g.colCols(), T(1), dOutI, g.colCols(), col.data(),
           g.colCols(), i == 0 ? T(0) : T(1), dF, g.colRows());
    }
    if (dIn) { // dcol = F^T * dOut[i], then back to the image
      gemm(true, false, g.colRows(), g.colCols(), g.o, T(1), f, g.colRows(), dOutI, g.colCols(),
           T(0), col.data(), g.colCols());
      col2im(g, col.data(), dIn + i * g.c * g.h * g.w);
    }
  }
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(conv2d_grad, conv2dGrad);

using kernels::PoolGeom;
using kernels::poolGeom;

/// Calls f(outIndex, inIndex, windowCount) for every (output cell, input cell in its window).
template <typename F> static void forEachWindow(const PoolGeom &g, F f) {
  for (int64_t p = 0; p < g.planes; ++p)
    for (int64_t y = 0; y < g.oh; ++y)
      for (int64_t x = 0; x < g.ow; ++x) {
        int64_t y0 = std::max<int64_t>(y * g.sh - g.ph, 0),
                x0 = std::max<int64_t>(x * g.sw - g.pw, 0);
        int64_t y1 = std::min(y * g.sh - g.ph + g.kh, g.h),
                x1 = std::min(x * g.sw - g.pw + g.kw, g.w);
        int64_t count = (y1 - y0) * (x1 - x0); // avg excludes padding, as Paddle's default
        int64_t o = (p * g.oh + y) * g.ow + x;
        for (int64_t iy = y0; iy < y1; ++iy)
          for (int64_t ix = x0; ix < x1; ++ix)
            f(o, (p * g.h + iy) * g.w + ix, count);
      }
}

template <typename T> static llvm::Error pool2d(KernelContext &ctx) {
  PoolGeom g = poolGeom(ctx);
  const T *in = ctx.input("X").data<T>();
  Tensor &outT = ctx.output("Out");
  T *out = outT.data<T>();
  std::fill_n(out, outT.numel(), g.isMax ? std::numeric_limits<T>::lowest() : T(0));
  forEachWindow(g, [&](int64_t o, int64_t i, int64_t count) {
    out[o] = g.isMax ? std::max(out[o], in[i]) : out[o] + in[i] / T(count);
  });
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(pool2d, pool2d);

// Max: the gradient goes to the first input cell equal to the max; avg: spread evenly.
template <typename T> static llvm::Error pool2dGrad(KernelContext &ctx) {
  PoolGeom g = poolGeom(ctx);
  const T *in = ctx.input("X").data<T>(), *out = ctx.input("Out").data<T>();
  const T *dout = ctx.input("Out@GRAD").data<T>();
  Tensor &dxT = ctx.output("X@GRAD");
  T *dx = dxT.data<T>();
  std::fill_n(dx, dxT.numel(), T(0));
  std::vector<bool> taken(g.isMax ? ctx.input("Out").numel() : 0, false);
  forEachWindow(g, [&](int64_t o, int64_t i, int64_t count) {
    if (!g.isMax)
      dx[i] += dout[o] / T(count);
    else if (!taken[o] && in[i] == out[o]) {
      dx[i] += dout[o];
      taken[o] = true;
    }
  });
  return llvm::Error::success();
}
OAR_CPU_FLOAT_KERNELS(pool2d_grad, pool2dGrad);

} // namespace oar::cpu
