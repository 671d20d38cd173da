// A fully connected layer whose input is mostly zeros, as a relu leaves it: it sums only the
// input's nonzero entries. In a trained CTR MLP three quarters of a hidden layer's outputs are
// zeros (wide & deep on oar-gen-ctr: 80% and 74%), so the layer after it does a quarter of a
// GEMM's multiplications. The predictor gives this kernel the layers fed by a relu and checks each
// batch's density: a batch with more nonzeros runs the GEMM (sparseInputPays).
//
// The sums are f32 in another order than the GEMM's: the scores agree with the GEMM's to f32's
// rounding, not to the bit. Fast with AVX-512 (x86); elsewhere sparseInputLayers() is false and
// the predictor does not use it.
#pragma once

#include <cstdint>

#include "executor/tensor.h"

namespace oar {

/// Whether this CPU runs sparseInputLayer faster than a GEMM could (it has AVX-512F).
bool sparseInputLayers();

/// Whether a [k, n] weight is small enough for sparseInputLayer (its offsets are 32-bit).
bool sparseInputFits(int64_t k, int64_t n);

/// `w` (f32 [k, n], row-major) and then `bias` (f32 [n]), each row padded with zeros to a
/// multiple of 16 columns: an f32 tensor [k + 1, paddedColumns(n)] whose rows start on 64-byte
/// lines, for sparseInputLayer.
Tensor padWeightRows(const float *w, int64_t k, int64_t n, const float *bias);
int64_t paddedColumns(int64_t n);

/// Whether x[m x k] has few enough nonzeros that sparseInputLayer beats the GEMM: at most 40% of
/// its first 64 rows' entries (the crossover measured here was about 45%).
bool sparseInputPays(const float *x, int64_t m, int64_t k);

/// out[m x n] = act(x[m x k] * w + bias) from `padded` (padWeightRows of w and bias), summing
/// only x's nonzero entries; act is relu or the identity. Row i's result depends only on row i.
/// Runs on OpenMP's threads of the calling thread (one predict() call's threadsPerCall). Safe to
/// call from many threads at once.
void sparseInputLayer(const float *x, int64_t m, int64_t k, const Tensor &padded, int64_t n,
                      bool relu, float *out);

} // namespace oar
