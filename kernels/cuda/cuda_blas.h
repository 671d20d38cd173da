// Row-major GEMM on the GPU through cuBLAS (column-major), with the CPU gemm's signature.
#pragma once

#include "kernels/cuda/cuda_util.h"

namespace oar::cuda {

/// Row-major C = alpha * op(A) * op(B) + beta * C on the calling thread's stream.
llvm::Error gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha,
                 const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                 int64_t ldc);
llvm::Error gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha,
                 const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                 double *c, int64_t ldc);

} // namespace oar::cuda
