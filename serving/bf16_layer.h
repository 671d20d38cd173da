// A fully connected layer in bfloat16: oneDNN's matmul on bf16 inputs and weights, f32 bias and
// output, relu fused; on CPUs with AMX (Sapphire Rapids on) a tile engine does the products.
// The predictor's bf16 option (PredictorOptions::bf16Layers) runs its fc ops here.
#pragma once

#include <cstdint>

#include "executor/tensor.h"
#include "llvm/Support/Error.h"

namespace oar {

/// Whether oneDNN can run a bf16 matmul on this CPU (it needs AVX-512); otherwise an error that
/// says so.
llvm::Error checkBf16Layers();

/// `w` (f32 [k, n], row-major) rounded to bf16 (to nearest, ties to even) and laid out in the
/// blocks oneDNN's matmul reads on this CPU, so that no call repacks it: a bf16 tensor of
/// oneDNN's size for them, for bf16Layer.
llvm::Expected<Tensor> packBf16Weights(const float *w, int64_t k, int64_t n);

/// out[m x n] = act(x[m x k] * w + bias[n]) with x rounded to bf16 first and `packed` from
/// packBf16Weights; act is relu or the identity. Safe to call from many threads at once.
llvm::Error bf16Layer(const float *x, int64_t m, int64_t k, const Tensor &packed, int64_t n,
                      const float *bias, bool relu, float *out);

} // namespace oar
