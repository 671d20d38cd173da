// serving/sparse_input_layer.h against a product in double: every shape's edges (columns not a
// multiple of 16, one row, rows of zeros), relu or not, one or two threads.
#include <omp.h>

#include <cmath>
#include <random>

#include <catch2/catch.hpp>

#include "serving/sparse_input_layer.h"
#include "test/helpers/skip.h"

using namespace oar;

namespace {

struct Layer {
  int64_t m, k, n;
  std::vector<float> x, w, bias;
};

/// Random weights and an input with `zeros` of its entries 0 (and row 0 all zeros).
Layer randomLayer(int64_t m, int64_t k, int64_t n, double zeros, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::bernoulli_distribution zero(zeros);
  Layer l{m, k, n, std::vector<float>(m * k), std::vector<float>(k * n), std::vector<float>(n)};
  for (int64_t i = 0; i < m * k; ++i)
    l.x[i] = i < k || zero(rng) ? 0.0f : value(rng);
  for (float &v : l.w)
    v = value(rng);
  for (float &v : l.bias)
    v = value(rng);
  return l;
}

/// Runs the layer into a buffer with guard values after its m * n outputs, and checks them.
std::vector<float> runLayer(const Layer &l, bool relu) {
  Tensor padded = padWeightRows(l.w.data(), l.k, l.n, l.bias.data());
  std::vector<float> out(l.m * l.n + 17, 12345.0f);
  sparseInputLayer(l.x.data(), l.m, l.k, padded, l.n, relu, out.data());
  for (size_t i = l.m * l.n; i < out.size(); ++i)
    REQUIRE(out[i] == 12345.0f); // nothing written past the output
  out.resize(l.m * l.n);
  return out;
}

} // namespace

TEST_CASE("sparseInputLayer equals the layer's product in double, at every shape", "[serving]") {
  if (!sparseInputLayers())
    WARN("this CPU has no AVX-512: only the portable loop is tested");
  uint32_t seed = 1;
  for (int64_t m : {1, 3, 64, 65, 130})
    for (int64_t k : {1, 15, 16, 17, 100})
      for (int64_t n : {1, 7, 16, 17, 80, 81, 96, 400})
        for (bool relu : {false, true}) {
          Layer l = randomLayer(m, k, n, 0.7, ++seed);
          std::vector<float> out = runLayer(l, relu);
          for (int64_t i = 0; i < m; ++i)
            for (int64_t c = 0; c < n; ++c) {
              double sum = l.bias[c], scale = std::abs(l.bias[c]);
              for (int64_t j = 0; j < k; ++j) {
                sum += 1.0 * l.x[i * k + j] * l.w[j * n + c];
                scale += std::abs(1.0 * l.x[i * k + j] * l.w[j * n + c]);
              }
              if (relu)
                sum = std::max(sum, 0.0);
              INFO("m " << m << " k " << k << " n " << n << " relu " << relu << " at " << i << ", "
                        << c);
              REQUIRE(std::abs(out[i * n + c] - sum) <= 1e-6 * scale + 1e-30);
            }
        }
}

TEST_CASE("sparseInputLayer gives each row the same bits on one thread and on two", "[serving]") {
  if (!sparseInputLayers())
    OAR_SKIP("this CPU has no AVX-512: the portable loop runs on one thread");
  Layer l = randomLayer(300, 400, 400, 0.8, 7);
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  std::vector<float> one = runLayer(l, true);
  omp_set_num_threads(2);
  std::vector<float> two = runLayer(l, true);
  omp_set_num_threads(threads);
  // And a row alone gives its bits within the batch.
  Layer row = l;
  row.m = 1;
  row.x.assign(l.x.begin() + 150 * l.k, l.x.begin() + 151 * l.k);
  std::vector<float> alone = runLayer(row, true);
  CHECK(one == two);
  CHECK(std::equal(alone.begin(), alone.end(), one.begin() + 150 * l.n));
}

TEST_CASE("sparseInputLayer passes a NaN in its input on, relu or not, as the product would",
          "[serving]") {
  Layer l = randomLayer(2, 20, 33, 0.5, 3);
  l.x[1 * 20 + 5] = std::nanf("");
  for (bool relu : {false, true}) {
    INFO("relu " << relu);
    std::vector<float> out = runLayer(l, relu);
    for (int64_t c = 0; c < l.n; ++c) {
      CHECK(std::isfinite(out[c]));
      CHECK(std::isnan(out[l.n + c]));
    }
  }
}

TEST_CASE("sparseInputPays when at most 40% of the first 64 rows' entries are nonzero",
          "[serving]") {
  std::vector<float> x(100, 0.0f);
  std::fill(x.begin(), x.begin() + 40, 1.0f);
  CHECK(sparseInputPays(x.data(), 10, 10));
  x[40] = -2.0f;
  CHECK_FALSE(sparseInputPays(x.data(), 10, 10));
  // Only the first 64 rows count.
  std::vector<float> tall(100 * 10, 0.0f);
  std::fill(tall.begin() + 64 * 10, tall.end(), 1.0f);
  CHECK(sparseInputPays(tall.data(), 100, 10));
  tall[0] = tall[1] = tall[2] = tall[3] = tall[4] = 1.0f; // row 0 dense: 5 of 640
  CHECK(sparseInputPays(tall.data(), 100, 10));
}
