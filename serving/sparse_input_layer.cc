// The layer as AVX-512 code. For a chunk of rows it first lists each row's nonzero entries (their
// weight rows' offsets and their values), then runs over the weight in column blocks of 80 floats
// (five vectors): for each row, each listed entry adds its value times its weight row's block to
// the row's accumulators. Two sets of accumulators take alternate entries, so that two chains of
// fused multiply-adds are in flight; a block's weight rows (400 x 320 bytes for wide & deep) stay
// in L2 while every row of the chunk reads them.
#include "serving/sparse_input_layer.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define OAR_AVX512 __attribute__((target("avx512f")))
#endif

namespace oar {

namespace {

constexpr int64_t kLanes = 16;      // floats in a vector
constexpr int kBlockVectors = 5;    // vectors in a column block (see the top)
constexpr int64_t kChunkRows = 64;  // rows whose nonzeros are listed at once
constexpr double kMaxDensity = 0.4; // above it the GEMM is faster (about 0.45 measured)

} // namespace

int64_t paddedColumns(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

bool sparseInputFits(int64_t k, int64_t n) {
  return static_cast<double>(k) * paddedColumns(n) < 2147483648.0; // offsets are int32
}

Tensor padWeightRows(const float *w, int64_t k, int64_t n, const float *bias) {
  int64_t stride = paddedColumns(n);
  Tensor padded(proto::F32, {k + 1, stride});
  float *to = padded.data<float>();
  for (int64_t i = 0; i <= k; ++i) {
    const float *from = i < k ? w + i * n : bias;
    std::copy(from, from + n, to + i * stride);
    std::fill(to + i * stride + n, to + (i + 1) * stride, 0.0f);
  }
  return padded;
}

bool sparseInputPays(const float *x, int64_t m, int64_t k) {
  // The first rows stand for the batch: counting them all cost 3% of wide & deep's predictions.
  int64_t total = std::min(m, kChunkRows) * k, nonzero = 0;
  for (int64_t i = 0; i < total; ++i)
    nonzero += x[i] != 0.0f;
  return nonzero <= kMaxDensity * static_cast<double>(total);
}

namespace {

/// The layer in plain C++, for CPUs without AVX-512 (the predictor does not pick it there: it
/// is no faster than the GEMM).
void portableLayer(const float *x, int64_t m, int64_t k, const float *w, int64_t stride, int64_t n,
                   bool relu, float *out) {
  const float *bias = w + k * stride;
  for (int64_t i = 0; i < m; ++i) {
    float *row = out + i * n;
    std::copy(bias, bias + n, row);
    for (int64_t j = 0; j < k; ++j)
      if (float v = x[i * k + j]; v != 0.0f)
        for (int64_t c = 0; c < n; ++c)
          row[c] += v * w[j * stride + c];
    if (relu)
      for (int64_t c = 0; c < n; ++c)
        row[c] = std::max(row[c], 0.0f);
  }
}

} // namespace

#if defined(__x86_64__)

bool sparseInputLayers() { return __builtin_cpu_supports("avx512f"); }

namespace {

/// A row's nonzero entries (NaNs too, so that they reach the output as in a GEMM): the offset of
/// each one's weight row (column index times `stride`) and its value. Returns how many.
OAR_AVX512 int64_t listNonzeros(const float *row, int64_t k, int64_t stride, int32_t *offsets,
                                float *values) {
  const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i step = _mm512_set1_epi32(static_cast<int32_t>(stride));
  int64_t count = 0;
  for (int64_t j = 0; j < k; j += kLanes) {
    __mmask16 in = j + kLanes <= k ? __mmask16(0xffff) : __mmask16((1u << (k - j)) - 1);
    __m512 x = _mm512_maskz_loadu_ps(in, row + j);
    __mmask16 nonzero = _mm512_mask_cmp_ps_mask(in, x, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    __m512i column = _mm512_add_epi32(lanes, _mm512_set1_epi32(static_cast<int32_t>(j)));
    // Compressed in registers and stored whole (up to 15 lanes past the count, which the
    // scratch leaves room for): compress-to-memory is microcoded and slow on some CPUs (Zen 4).
    _mm512_storeu_ps(values + count, _mm512_maskz_compress_ps(nonzero, x));
    _mm512_storeu_si512(offsets + count,
                        _mm512_maskz_compress_epi32(nonzero, _mm512_mullo_epi32(column, step)));
    count += __builtin_popcount(nonzero);
  }
  return count;
}

/// One row's `V` vectors of output from column `column` on: bias plus the listed entries times
/// their weight rows, relu'd if asked; `n` is the output's width (the last vector may be partial).
template <int V>
OAR_AVX512 void rowBlock(const int32_t *offsets, const float *values, int64_t count, const float *w,
                         const float *bias, bool relu, float *out, int64_t column, int64_t n) {
  __m512 even[V], odd[V];
  for (int v = 0; v < V; ++v) {
    even[v] = _mm512_load_ps(bias + column + v * kLanes);
    odd[v] = _mm512_setzero_ps();
  }
  const float *block = w + column;
  int64_t t = 0;
  for (; t + 2 <= count; t += 2) {
    __m512 x0 = _mm512_set1_ps(values[t]), x1 = _mm512_set1_ps(values[t + 1]);
    const float *w0 = block + offsets[t], *w1 = block + offsets[t + 1];
    for (int v = 0; v < V; ++v) {
      even[v] = _mm512_fmadd_ps(x0, _mm512_load_ps(w0 + v * kLanes), even[v]);
      odd[v] = _mm512_fmadd_ps(x1, _mm512_load_ps(w1 + v * kLanes), odd[v]);
    }
  }
  if (t < count) {
    __m512 x0 = _mm512_set1_ps(values[t]);
    const float *w0 = block + offsets[t];
    for (int v = 0; v < V; ++v)
      even[v] = _mm512_fmadd_ps(x0, _mm512_load_ps(w0 + v * kLanes), even[v]);
  }
  for (int v = 0; v < V; ++v) {
    __m512 sum = _mm512_add_ps(even[v], odd[v]);
    if (relu)
      sum = _mm512_max_ps(_mm512_setzero_ps(), sum); // max's NaN is its second operand
    int64_t left = n - column - v * kLanes;
    if (left >= kLanes)
      _mm512_storeu_ps(out + column + v * kLanes, sum);
    else
      _mm512_mask_storeu_ps(out + column + v * kLanes, __mmask16((1u << left) - 1), sum);
  }
}

struct Scratch {
  std::vector<int32_t> offsets;
  std::vector<float> values;
  std::vector<int64_t> counts;
};

OAR_AVX512 void layerChunk(const float *x, int64_t rows, int64_t k, const float *w, int64_t stride,
                           int64_t n, const float *bias, bool relu, float *out) {
  thread_local Scratch s;
  // A row's list may spill up to 15 entries into the next row's space (listed after it) or,
  // for the last row, into the spare vector at the end.
  s.offsets.resize(static_cast<size_t>(rows * k + kLanes));
  s.values.resize(static_cast<size_t>(rows * k + kLanes));
  s.counts.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    s.counts[r] = listNonzeros(x + r * k, k, stride, &s.offsets[r * k], &s.values[r * k]);
  int64_t column = 0;
  for (; column + kBlockVectors * kLanes <= stride; column += kBlockVectors * kLanes)
    for (int64_t r = 0; r < rows; ++r)
      rowBlock<kBlockVectors>(&s.offsets[r * k], &s.values[r * k], s.counts[r], w, bias, relu,
                              out + r * n, column, n);
  for (; column < stride; column += kLanes)
    for (int64_t r = 0; r < rows; ++r)
      rowBlock<1>(&s.offsets[r * k], &s.values[r * k], s.counts[r], w, bias, relu, out + r * n,
                  column, n);
}

} // namespace

void sparseInputLayer(const float *x, int64_t m, int64_t k, const Tensor &padded, int64_t n,
                      bool relu, float *out) {
  int64_t stride = padded.dim(1);
  const float *w = padded.data<float>(), *b = w + k * stride;
  if (!sparseInputLayers())
    return portableLayer(x, m, k, w, stride, n, relu, out);
  int64_t chunks = (m + kChunkRows - 1) / kChunkRows;
#pragma omp parallel for schedule(static) if (chunks > 1 && omp_get_max_threads() > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t first = c * kChunkRows, rows = std::min(kChunkRows, m - first);
    layerChunk(x + first * k, rows, k, w, stride, n, b, relu, out + first * n);
  }
}

#else // not x86

bool sparseInputLayers() { return false; }

void sparseInputLayer(const float *x, int64_t m, int64_t k, const Tensor &padded, int64_t n,
                      bool relu, float *out) {
  int64_t stride = padded.dim(1);
  portableLayer(x, m, k, padded.data<float>(), stride, n, relu, out);
}

#endif

} // namespace oar
