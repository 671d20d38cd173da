// A fully connected layer in bfloat16: oneDNN's matmul on bf16 inputs and weights, f32 bias and
// output, relu fused; on CPUs with AMX (Sapphire Rapids on) a tile engine does the products.
// The predictor's bf16 option (PredictorOptions::bf16Layers) runs its fc ops here.
#pragma once

#include <cstdint>

#include "llvm/Support/Error.h"

namespace oar {

/// Whether oneDNN can run a bf16 matmul on this CPU (it needs AVX-512); otherwise an error that
/// says so.
llvm::Error checkBf16Layers();

/// `n` floats rounded to the nearest bfloat16 (ties to even; NaN stays NaN).
void floatsToBf16(const float *in, uint16_t *out, int64_t n);

/// out[m x n] = act(x[m x k] * w[k x n] + bias[n]), with x rounded to bf16 first and w bf16,
/// row-major; act is relu or the identity. Safe to call from many threads at once.
llvm::Error bf16Layer(const float *x, int64_t m, int64_t k, const uint16_t *w, int64_t n,
                      const float *bias, bool relu, float *out);

} // namespace oar
