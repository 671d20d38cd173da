// Row-major GEMM through cuBLAS: a row-major C is the column-major C^T = op(B)^T op(A)^T, so
// cuBLAS gets B before A with the same leading dimensions.
#include "kernels/cuda/cuda_blas.h"

namespace oar::cuda {

static cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

llvm::Error gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc) {
  if (m == 0 || n == 0)
    return llvm::Error::success();
  return check(cublasSgemm(blas(), op(transB), op(transA), int(n), int(m), int(k), &alpha, b,
                           int(ldb), a, int(lda), &beta, c, int(ldc)),
               "sgemm");
}

llvm::Error gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                 const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                 double *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return llvm::Error::success();
  return check(cublasDgemm(blas(), op(transB), op(transA), int(n), int(m), int(k), &alpha, b,
                           int(ldb), a, int(lda), &beta, c, int(ldc)),
               "dgemm");
}

} // namespace oar::cuda
