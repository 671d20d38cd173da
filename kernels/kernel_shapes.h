// The shapes a kernel derives from its inputs and attrs, shared by the CPU and CUDA kernels so
// both devices read an op the same way.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/kernel.h"

namespace oar::kernels {

/// concat/split's axis attr as a non-negative dim of a rank-`rank` tensor.
int64_t layoutAxis(const KernelContext &ctx, size_t rank);
/// The sizes along `axis` of the pieces split cuts X into (sections, or equal shares).
std::vector<int64_t> splitSections(const KernelContext &ctx, int64_t axis);
/// The sizes along `axis` of concat's inputs, which concat_grad cuts Out@GRAD into.
std::vector<int64_t> concatSizes(const KernelContext &ctx, int64_t axis);

/// mul: X flattened to [m, k] at x_num_col_dims, Y to [k, n].
struct MulDims {
  int64_t m, k, n;
};
MulDims mulDims(const KernelContext &ctx);

/// matmul: op(X) [m, k] times op(Y) [k, n], `batch` times over the leading dims.
struct MatmulDims {
  int64_t batch, m, k, n, xRows, xCols, yRows, yCols;
  bool tx, ty;
  float alpha;
};
MatmulDims matmulDims(const KernelContext &ctx);

/// conv2d, NCHW: Input [n, c, h, w], Filter [o, c, kh, kw], Output [n, o, oh, ow].
struct ConvGeom {
  int64_t n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw;
  int64_t colRows() const { return c * kh * kw; }
  int64_t colCols() const { return oh * ow; }
};
ConvGeom convGeom(const KernelContext &ctx);

/// pool2d, NCHW: `planes` = n * c images of h x w pooled to oh x ow.
struct PoolGeom {
  int64_t planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  bool isMax;
};
PoolGeom poolGeom(const KernelContext &ctx);

} // namespace oar::kernels
