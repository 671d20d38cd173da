// CUDA kernels of matmul and matmul_grad: cuBLAS GEMM per batch entry.
#include "kernels/cuda/cuda_blas.h"
#include "kernels/kernel_shapes.h"

namespace oar::cuda {

using kernels::MatmulDims;
using kernels::matmulDims;

template <typename T> static llvm::Error matmul(KernelContext &ctx) {
  MatmulDims d = matmulDims(ctx);
  const T *x = ctx.input("X").data<T>(), *y = ctx.input("Y").data<T>();
  T *out = ctx.output("Out").data<T>();
  for (int64_t b = 0; b < d.batch; ++b)
    if (llvm::Error err = gemm(d.tx, d.ty, d.m, d.n, d.k, T(d.alpha), x + b * d.xRows * d.xCols,
                               d.xCols, y + b * d.yRows * d.yCols, d.yCols, T(0),
                               out + b * d.m * d.n, d.n))
      return err;
  return llvm::Error::success();
}
OAR_CUDA_FLOAT_KERNELS(matmul, matmul);

// With Out = op(X) op(Y): d op(X) = dOut op(Y)^T and d op(Y) = op(X)^T dOut, transposed back
// when X or Y was used transposed.
template <typename T> static llvm::Error matmulGrad(KernelContext &ctx) {
  MatmulDims d = matmulDims(ctx);
  const T *x = ctx.input("X").data<T>(), *y = ctx.input("Y").data<T>();
  const T *dout = ctx.input("Out@GRAD").data<T>();
  T alpha(d.alpha);
  for (int64_t b = 0; b < d.batch; ++b) {
    const T *xb = x + b * d.xRows * d.xCols, *yb = y + b * d.yRows * d.yCols;
    const T *db = dout + b * d.m * d.n;
    if (ctx.hasOutput("X@GRAD")) {
      T *dx = ctx.output("X@GRAD").data<T>() + b * d.xRows * d.xCols;
      llvm::Error err =
          !d.tx // dX[m,k] = dOut[m,n] * op(Y)^T, else dX[k,m] = op(Y)[k,n] * dOut^T
              ? gemm(false, !d.ty, d.m, d.k, d.n, alpha, db, d.n, yb, d.yCols, T(0), dx, d.xCols)
              : gemm(d.ty, true, d.k, d.m, d.n, alpha, yb, d.yCols, db, d.n, T(0), dx, d.xCols);
      if (err)
        return err;
    }
    if (ctx.hasOutput("Y@GRAD")) {
      T *dy = ctx.output("Y@GRAD").data<T>() + b * d.yRows * d.yCols;
      llvm::Error err =
          !d.ty // dY[k,n] = op(X)^T * dOut, else dY[n,k] = dOut^T * op(X)
              ? gemm(!d.tx, false, d.k, d.n, d.m, alpha, xb, d.xCols, db, d.n, T(0), dy, d.yCols)
              : gemm(true, d.tx, d.n, d.k, d.m, alpha, db, d.n, xb, d.xCols, T(0), dy, d.yCols);
      if (err)
        return err;
    }
  }
  return llvm::Error::success();
}
OAR_CUDA_FLOAT_KERNELS(matmul_grad, matmulGrad);

} // namespace oar::cuda
