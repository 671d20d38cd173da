// Shared pieces of the CPU kernels: GEMM and registration of float/double kernels.
#pragma once

#include <cstdint>

#include "executor/kernel.h"

namespace oar::cpu {

/// Row-major C = alpha * op(A) * op(B) + beta * C, with op(A) M x K and op(B) K x N.
/// f32 runs oneDNN's sgemm; f64 (used by gradient checks) runs a plain loop.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
          int64_t lda, const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double *a,
          int64_t lda, const double *b, int64_t ldb, double beta, double *c, int64_t ldc);

/// Sizes of an elementwise broadcast: X as [pre, n, post] and Y as [n].
struct BroadcastShape {
  int64_t pre = 1, n = 1, post = 1;
};
BroadcastShape broadcastShape(llvm::ArrayRef<int64_t> x, llvm::ArrayRef<int64_t> y, int64_t axis);

} // namespace oar::cpu

/// Registers fn<float> and fn<double> as the CPU kernels of `op`.
#define OAR_CPU_FLOAT_KERNELS(op, fn)                                                              \
  OAR_KERNEL(op, ::oar::Device::Cpu, ::oar::proto::F32, fn<float>);                                \
  OAR_KERNEL(op, ::oar::Device::Cpu, ::oar::proto::F64, fn<double>)

/// Registers fn<T> for every dtype (layout ops that only move data).
#define OAR_CPU_ALL_KERNELS(op, fn)                                                                \
  OAR_CPU_FLOAT_KERNELS(op, fn);                                                                   \
  OAR_KERNEL(op, ::oar::Device::Cpu, ::oar::proto::I32, fn<int32_t>);                              \
  OAR_KERNEL(op, ::oar::Device::Cpu, ::oar::proto::I64, fn<int64_t>)
