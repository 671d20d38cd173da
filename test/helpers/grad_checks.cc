// The grad checks of every differentiable op (test/ops/grad_check_test.cc runs them; the CUDA
// tests run the same programs on both devices).
#include "test/helpers/grad_check.h"

using namespace oar;

static Tensor labels(std::vector<int64_t> values) {
  return Tensor::fromVector<int64_t>({static_cast<int64_t>(values.size()), 1}, values);
}

std::vector<GradCheck> allGradChecks() {
  std::vector<GradCheck> checks;

  checks.push_back(GradCheck{"mul",
                             {{"X", randomTensor({3, 4}, 1)}, {"Y", randomTensor({4, 5}, 2)}},
                             {{"Out", 1}},
                             {},
                             {},
                             {"X", "Y"}});
  checks.push_back(GradCheck{"mul",
                             {{"X", randomTensor({2, 2, 3}, 1)}, {"Y", randomTensor({6, 2}, 2)}},
                             {{"Out", 1}},
                             {},
                             {},
                             {"X", "Y"}});
  checks.push_back(GradCheck{"matmul",
                             {{"X", randomTensor({3, 4}, 3)}, {"Y", randomTensor({4, 2}, 4)}},
                             {{"Out", 1}},
                             {},
                             {{"alpha", 0.5f}},
                             {"X", "Y"}});
  checks.push_back(GradCheck{"matmul",
                             {{"X", randomTensor({4, 3}, 3)}, {"Y", randomTensor({2, 4}, 4)}},
                             {{"Out", 1}},
                             {},
                             {{"transpose_X", true}, {"transpose_Y", true}},
                             {"X", "Y"}});
  checks.push_back(GradCheck{"matmul",
                             {{"X", randomTensor({2, 3, 4}, 5)}, {"Y", randomTensor({2, 3, 2}, 6)}},
                             {{"Out", 1}},
                             {},
                             {{"transpose_X", true}},
                             {"X", "Y"}});

  for (const char *op : {"elementwise_add", "elementwise_sub", "elementwise_mul"}) {
    checks.push_back(GradCheck{op,
                               {{"X", randomTensor({3, 4}, 1)}, {"Y", randomTensor({3, 4}, 2)}},
                               {{"Out", 1}},
                               {},
                               {},
                               {"X", "Y"}});
    checks.push_back(GradCheck{op,
                               {{"X", randomTensor({2, 3, 4}, 3)}, {"Y", randomTensor({3}, 4)}},
                               {{"Out", 1}},
                               {},
                               {{"axis", int64_t(1)}},
                               {"X", "Y"}});
  }

  for (const char *op : {"relu", "sigmoid", "tanh", "softmax", "log1p"})
    checks.push_back(GradCheck{op, {{"X", randomTensor({3, 5}, 7)}}, {{"Out", 1}}, {}, {}, {"X"}});
  checks.push_back( // large values, where 1 / (1 + |x|) is far from 1
      GradCheck{"log1p", {{"X", randomTensor({2, 3}, 8, -50, 50)}}, {{"Out", 1}}, {}, {}, {"X"}});

  checks.push_back(
      GradCheck{"cross_entropy",
                {{"X", randomTensor({3, 4}, 1, 0.1, 1.0)}, {"Label", labels({0, 3, 1})}},
                {{"Y", 1}},
                {},
                {},
                {"X"}});
  checks.push_back(GradCheck{"softmax_with_cross_entropy",
                             {{"Logits", randomTensor({3, 4}, 2)}, {"Label", labels({2, 0, 3})}},
                             {{"Loss", 1}},
                             {{"Softmax", 1}},
                             {},
                             {"Logits"}});
  checks.push_back(
      GradCheck{"sigmoid_cross_entropy_with_logits",
                {{"X", randomTensor({3, 4}, 3)}, {"Label", randomTensor({3, 4}, 4, 0, 1)}},
                {{"Out", 1}},
                {},
                {},
                {"X"}});
  checks.push_back(GradCheck{"square_error_cost",
                             {{"X", randomTensor({4, 2}, 5)}, {"Y", randomTensor({4, 2}, 6)}},
                             {{"Out", 1}},
                             {},
                             {},
                             {"X", "Y"}});

  checks.push_back(
      GradCheck{"mean", {{"X", randomTensor({3, 4}, 1)}}, {{"Out", 1}}, {}, {}, {"X"}});
  checks.push_back(GradCheck{"reduce_sum",
                             {{"X", randomTensor({2, 3, 4}, 2)}},
                             {{"Out", 1}},
                             {},
                             {{"dim", std::vector<int64_t>{0, 2}}},
                             {"X"}});
  checks.push_back(GradCheck{"reduce_sum",
                             {{"X", randomTensor({2, 3}, 3)}},
                             {{"Out", 1}},
                             {},
                             {{"dim", std::vector<int64_t>{-1}}, {"keep_dim", true}},
                             {"X"}});
  checks.push_back(GradCheck{"scale",
                             {{"X", randomTensor({3, 2}, 4)}},
                             {{"Out", 1}},
                             {},
                             {{"scale", -2.5f}, {"bias", 0.5f}},
                             {"X"}});
  checks.push_back(GradCheck{"sum",
                             {{"X", randomTensor({2, 3}, 5)},
                              {"X", randomTensor({2, 3}, 6)},
                              {"X", randomTensor({2, 3}, 7)}},
                             {{"Out", 1}},
                             {},
                             {},
                             {"X"}});

  checks.push_back(GradCheck{"concat",
                             {{"X", randomTensor({2, 3}, 1)}, {"X", randomTensor({2, 1}, 2)}},
                             {{"Out", 1}},
                             {},
                             {{"axis", int64_t(1)}},
                             {"X"}});
  checks.push_back(GradCheck{"split",
                             {{"X", randomTensor({5, 2}, 3)}},
                             {{"Out", 2}},
                             {},
                             {{"sections", std::vector<int64_t>{2, 3}}},
                             {"X"}});
  checks.push_back(GradCheck{"reshape",
                             {{"X", randomTensor({2, 6}, 4)}},
                             {{"Out", 1}},
                             {},
                             {{"shape", std::vector<int64_t>{3, -1}}},
                             {"X"}});
  checks.push_back(GradCheck{"transpose",
                             {{"X", randomTensor({2, 3, 4}, 5)}},
                             {{"Out", 1}},
                             {},
                             {{"axis", std::vector<int64_t>{2, 0, 1}}},
                             {"X"}});
  checks.push_back(GradCheck{"lookup_table",
                             {{"W", randomTensor({5, 3}, 6)}, {"Ids", labels({4, 0, 4, 2})}},
                             {{"Out", 1}},
                             {},
                             {},
                             {"W"}});
  // Selected rows, checked as the dense gradient they stand for; id 1 is padding.
  checks.push_back(GradCheck{"lookup_table",
                             {{"W", randomTensor({5, 3}, 7)}, {"Ids", labels({4, 1, 0, 4, 2, 4})}},
                             {{"Out", 1}},
                             {},
                             {{"is_sparse", true}, {"padding_idx", int64_t(1)}},
                             {"W"}});

  checks.push_back(GradCheck{
      "conv2d",
      {{"Input", randomTensor({2, 2, 5, 5}, 1)}, {"Filter", randomTensor({3, 2, 3, 3}, 2)}},
      {{"Output", 1}},
      {},
      {{"strides", std::vector<int64_t>{2, 1}}, {"paddings", std::vector<int64_t>{1, 1}}},
      {"Input", "Filter"}});
  checks.push_back(
      GradCheck{"pool2d", {{"X", randomTensor({1, 2, 4, 4}, 3)}}, {{"Out", 1}}, {}, {}, {"X"}});
  checks.push_back(GradCheck{"pool2d",
                             {{"X", randomTensor({1, 2, 5, 5}, 4)}},
                             {{"Out", 1}},
                             {},
                             {{"pooling_type", "avg"},
                              {"ksize", std::vector<int64_t>{3, 3}},
                              {"paddings", std::vector<int64_t>{1, 1}}},
                             {"X"}});
  // Normalisation: the batch's statistics (training), per channel of [N, C] and of NCHW.
  checks.push_back(
      GradCheck{"batch_norm",
                {{"X", randomTensor({5, 3}, 11)},
                 {"Scale", randomTensor({3}, 12, 0.5, 1.5)},
                 {"Bias", randomTensor({3}, 13)},
                 {"Mean", randomTensor({3}, 14)},
                 {"Variance", randomTensor({3}, 15, 0.5, 1.5)}},
                {{"Y", 1}},
                {{"MeanOut", 1}, {"VarianceOut", 1}, {"SavedMean", 1}, {"SavedInvStd", 1}},
                {},
                {"X", "Scale", "Bias"}});
  checks.push_back(
      GradCheck{"batch_norm",
                {{"X", randomTensor({2, 3, 2, 2}, 16)},
                 {"Scale", randomTensor({3}, 17, 0.5, 1.5)},
                 {"Bias", randomTensor({3}, 18)},
                 {"Mean", randomTensor({3}, 19)},
                 {"Variance", randomTensor({3}, 20, 0.5, 1.5)}},
                {{"Y", 1}},
                {{"MeanOut", 1}, {"VarianceOut", 1}, {"SavedMean", 1}, {"SavedInvStd", 1}},
                {{"momentum", 0.8f}},
                {"X", "Scale", "Bias"}});
  checks.push_back(GradCheck{"layer_norm",
                             {{"X", randomTensor({2, 3, 5}, 21)},
                              {"Scale", randomTensor({5}, 22, 0.5, 1.5)},
                              {"Bias", randomTensor({5}, 23)}},
                             {{"Y", 1}},
                             {{"Mean", 1}, {"InvStd", 1}},
                             {},
                             {"X", "Scale", "Bias"}});
  // The mask is fixed by (seed, Step, trainer), so every finite difference sees the same one.
  checks.push_back(
      GradCheck{"dropout",
                {{"X", randomTensor({4, 5}, 24)}, {"Step", Tensor::fromVector<int64_t>({1}, {3})}},
                {{"Out", 1}},
                {{"Mask", 1}, {"StepOut", 1}},
                {{"dropout_prob", 0.4f}, {"seed", int64_t(7)}},
                {"X"}});
  return checks;
}
