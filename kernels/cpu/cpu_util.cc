// GEMM through oneDNN, and broadcast shapes.
#include "kernels/cpu/cpu_util.h"

#include "dnnl.h"

namespace oar::cpu {

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  if (m == 0 || n == 0)
    return;
  dnnl_status_t st = dnnl_sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', m, n, k, alpha, a, lda, b,
                                ldb, beta, c, ldc);
  assert(st == dnnl_success && "sgemm arguments are checked by shape inference");
  (void)st;
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc +=
            (transA ? a[p * lda + i] : a[i * lda + p]) * (transB ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = alpha * acc + (beta == 0 ? 0 : beta * c[i * ldc + j]);
    }
}

BroadcastShape broadcastShape(llvm::ArrayRef<int64_t> x, llvm::ArrayRef<int64_t> y, int64_t axis) {
  if (axis == -1)
    axis = static_cast<int64_t>(x.size() - y.size());
  BroadcastShape s;
  for (int64_t i = 0; i < axis; ++i)
    s.pre *= x[i];
  for (size_t i = 0; i < y.size(); ++i)
    s.n *= y[i];
  for (size_t i = axis + y.size(); i < x.size(); ++i)
    s.post *= x[i];
  return s;
}

} // namespace oar::cpu
