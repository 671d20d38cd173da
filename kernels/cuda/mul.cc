// CUDA kernels of mul and mul_grad: cuBLAS GEMM on the flattened matrices.
#include "kernels/cuda/cuda_blas.h"
#include "kernels/kernel_shapes.h"

namespace oar::cuda {

using kernels::mulDims;

template <typename T> static llvm::Error mul(KernelContext &ctx) {
  auto [m, k, n] = mulDims(ctx);
  return gemm(false, false, m, n, k, T(1), ctx.input("X").data<T>(), k, ctx.input("Y").data<T>(),
              n, T(0), ctx.output("Out").data<T>(), n);
}
OAR_CUDA_FLOAT_KERNELS(mul, mul);

// dX = dOut * Y^T; dY = X^T * dOut.
template <typename T> static llvm::Error mulGrad(KernelContext &ctx) {
  auto [m, k, n] = mulDims(ctx);
  const T *dout = ctx.input("Out@GRAD").data<T>();
  if (ctx.hasOutput("X@GRAD"))
    if (llvm::Error err = gemm(false, true, m, k, n, T(1), dout, n, ctx.input("Y").data<T>(), n,
                               T(0), ctx.output("X@GRAD").data<T>(), k))
      return err;
  if (ctx.hasOutput("Y@GRAD"))
    return gemm(true, false, k, n, m, T(1), ctx.input("X").data<T>(), k, dout, n, T(0),
                ctx.output("Y@GRAD").data<T>(), n);
  return llvm::Error::success();
}
OAR_CUDA_FLOAT_KERNELS(mul_grad, mulGrad);

} // namespace oar::cuda
