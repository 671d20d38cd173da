// Kernel shapes from inputs and attrs.
#include "kernels/kernel_shapes.h"

namespace oar::kernels {

int64_t layoutAxis(const KernelContext &ctx, size_t rank) {
  int64_t axis = ctx.attrs().getInt("axis");
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::vector<int64_t> splitSections(const KernelContext &ctx, int64_t axis) {
  auto sections = ctx.attrs().getInts("sections");
  size_t n = ctx.outputCount("Out");
  if (sections.empty())
    sections.assign(n, ctx.input("X").dim(axis) / static_cast<int64_t>(n));
  return sections;
}

std::vector<int64_t> concatSizes(const KernelContext &ctx, int64_t axis) {
  std::vector<int64_t> sizes;
  for (size_t i = 0; i < ctx.inputCount("X"); ++i)
    sizes.push_back(ctx.input("X", i).dim(axis));
  return sizes;
}

MulDims mulDims(const KernelContext &ctx) {
  const Tensor &x = ctx.input("X"), &y = ctx.input("Y");
  int64_t xn = ctx.attrs().getInt("x_num_col_dims");
  int64_t m = 1;
  for (int64_t i = 0; i < xn; ++i)
    m *= x.dim(i);
  int64_t k = x.numel() / std::max<int64_t>(m, 1);
  return {m, k, y.numel() / std::max<int64_t>(k, 1)};
}

MatmulDims matmulDims(const KernelContext &ctx) {
  const Tensor &x = ctx.input("X"), &y = ctx.input("Y");
  MatmulDims d;
  size_t r = x.rank();
  d.tx = ctx.attrs().getBool("transpose_X");
  d.ty = ctx.attrs().getBool("transpose_Y");
  d.alpha = ctx.attrs().getFloat("alpha");
  d.xRows = x.dim(r - 2), d.xCols = x.dim(r - 1), d.yRows = y.dim(r - 2), d.yCols = y.dim(r - 1);
  d.batch = x.numel() / std::max<int64_t>(d.xRows * d.xCols, 1);
  d.m = d.tx ? d.xCols : d.xRows;
  d.k = d.tx ? d.xRows : d.xCols;
  d.n = d.ty ? d.yRows : d.yCols;
  return d;
}

ConvGeom convGeom(const KernelContext &ctx) {
  const Tensor &in = ctx.input("Input"), &f = ctx.input("Filter");
  auto s = ctx.attrs().getInts("strides"), p = ctx.attrs().getInts("paddings"),
       d = ctx.attrs().getInts("dilations");
  ConvGeom g{in.dim(0), in.dim(1), in.dim(2), in.dim(3), f.dim(0), f.dim(2), f.dim(3), 0,
             0,         s[0],      s[1],      p[0],      p[1],     d[0],     d[1]};
  g.oh = (g.h + 2 * g.ph - (g.dh * (g.kh - 1) + 1)) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - (g.dw * (g.kw - 1) + 1)) / g.sw + 1;
  return g;
}

PoolGeom poolGeom(const KernelContext &ctx) {
  const Tensor &x = ctx.input("X");
  PoolGeom g;
  g.planes = x.dim(0) * x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.isMax = ctx.attrs().getString("pooling_type") == "max";
  if (ctx.attrs().getBool("global_pooling")) {
    g.kh = g.h, g.kw = g.w, g.sh = g.sw = 1, g.ph = g.pw = 0;
  } else {
    auto k = ctx.attrs().getInts("ksize"), s = ctx.attrs().getInts("strides"),
         p = ctx.attrs().getInts("paddings");
    g.kh = k[0], g.kw = k[1], g.sh = s[0], g.sw = s[1], g.ph = p[0], g.pw = p[1];
  }
  g.oh = (g.h + 2 * g.ph - g.kh) / g.sh + 1;
  g.ow = (g.w + 2 * g.pw - g.kw) / g.sw + 1;
  return g;
}

} // namespace oar::kernels
