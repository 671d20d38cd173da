// The predictor's fused layers (serving/fuse_fc.h) and its bf16 layers (serving/bf16_layer.h):
// what fuses and what does not, the same scores to the bit, and bf16 scores close to f32's; and
// the layers that sum only their input's nonzeros (serving/sparse_input_layer.h).
#include <cmath>

#include "feed/batch_source.h"
#include "ir/names.h"
#include "serving/bf16_layer.h"
#include "serving/export.h"
#include "serving/fuse_fc.h"
#include "serving/predictor.h"
#include "serving/sparse_input_layer.h"
#include "test/helpers/ctr_data.h"
#include "test/helpers/expect.h"
#include "test/helpers/job.h"
#include "test/helpers/skip.h"

using namespace oar;

namespace {

/// wide_deep (MLP `hidden`) trained one epoch on the test click logs and exported; the export's
/// dir.
std::string exportedCtrModel(const std::string &dir, const std::string &hidden = "64,32") {
  std::string model = dir + "/model";
  run(binDir() + "/oar-model --model=wide_deep --format=criteo --data=" + ctrData() +
      "/train.txt --test-data=" + ctrData() + "/test.txt --vocab=65536 --hidden=" + hidden +
      " --batch-size=1000 -o " + model);
  run(binDir() + "/oar-executor --main " + model + "/main.pb --startup " + model +
      "/startup.pb --save " + dir + "/save");
  run(binDir() + "/oar-export " + model + " --load " + dir + "/save -o " + dir + "/export");
  return dir + "/export";
}

/// The test rows as `p`'s feed reads them, `rows` a batch.
std::vector<std::vector<Tensor>> testBatches(const Predictor &p, int64_t rows) {
  proto::DataFeed feed = p.program().test_feed();
  feed.set_batch_size(rows);
  auto source = requireValue(openBatchSource(feed, p.program().blocks(0)));
  std::vector<std::vector<Tensor>> batches;
  std::vector<Tensor> batch;
  int64_t epoch = 0;
  while (requireValue(source->next(batch, epoch))) {
    std::vector<Tensor> inputs;
    for (const std::string &in : p.inputs()) {
      auto at = std::find(source->columns().begin(), source->columns().end(), in);
      inputs.push_back(batch[at - source->columns().begin()].clone());
    }
    batches.push_back(std::move(inputs));
  }
  return batches;
}

/// Calls `check(got, want)` with the scores of `got` and `want` on the first 4 test batches of
/// each size in `sizes`.
template <typename Check>
void compareScores(const Predictor &got, const Predictor &want, std::vector<int64_t> sizes,
                   Check check) {
  for (int64_t rows : sizes) {
    auto batches = testBatches(got, rows);
    REQUIRE(batches.size() > 3);
    for (size_t b = 0; b < 4; ++b) {
      Tensor wanted = requireValue(want.predict(batches[b]))[0];
      Tensor gotten = requireValue(got.predict(batches[b]))[0];
      REQUIRE(gotten.numel() == wanted.numel());
      check(gotten, wanted);
    }
  }
}

int countOps(const proto::Program &p, llvm::StringRef type) {
  return llvm::count_if(p.blocks(0).ops(), [&](const proto::Op &op) { return op.type() == type; });
}

/// A program computing out = relu(x * w + b) [* w2 + b2] by hand, for the fusion's rules.
proto::Program layerProgram(bool second) {
  proto::Program p = newProgram();
  proto::Block &b = *p.mutable_blocks(0);
  declareVar(b, "x", proto::F32, {-1, 4});
  declareVar(b, "w", proto::F32, {4, 3});
  declareVar(b, "b", proto::F32, {3});
  *b.add_ops() = makeOp("mul", {{"X", {"x"}}, {"Y", {"w"}}}, {{"Out", {"m"}}},
                        {{"x_num_col_dims", int64_t(1)}, {"y_num_col_dims", int64_t(1)}});
  *b.add_ops() = makeOp("elementwise_add", {{"X", {"m"}}, {"Y", {"b"}}}, {{"Out", {"a"}}},
                        {{"axis", int64_t(1)}});
  *b.add_ops() = makeOp("relu", {{"X", {"a"}}}, {{"Out", {"h"}}});
  p.add_predictions("h");
  if (second) {
    declareVar(b, "w2", proto::F32, {3, 1});
    declareVar(b, "b2", proto::F32, {1});
    *b.add_ops() = makeOp("mul", {{"X", {"h"}}, {"Y", {"w2"}}}, {{"Out", {"m2"}}},
                          {{"x_num_col_dims", int64_t(1)}, {"y_num_col_dims", int64_t(1)}});
    *b.add_ops() = makeOp("elementwise_add", {{"X", {"m2"}}, {"Y", {"b2"}}}, {{"Out", {"y"}}},
                          {{"axis", int64_t(-1)}});
  }
  return p;
}

} // namespace

TEST_CASE("fuseFullyConnected fuses mul, bias and relu, and leaves a layer whose inner vars are "
          "read elsewhere",
          "[serving]") {
  proto::Program two = layerProgram(true);
  CHECK(fuseFullyConnected(two) == 2);
  REQUIRE(two.blocks(0).ops_size() == 2);
  const proto::Op &first = two.blocks(0).ops(0), &second = two.blocks(0).ops(1);
  CHECK(first.type() == "fc");
  CHECK(opOutputs(first, "Out") == std::vector<std::string>{"h"});
  CHECK(findAttr(first, "activation")->s() == "relu");
  CHECK(opOutputs(second, "Out") == std::vector<std::string>{"y"});
  CHECK(findAttr(second, "activation")->s().empty());

  // The sum before the relu is a prediction: the relu stays its own op.
  proto::Program visible = layerProgram(false);
  visible.add_predictions("a");
  CHECK(fuseFullyConnected(visible) == 1);
  CHECK(countOps(visible, "relu") == 1);
  CHECK(countOps(visible, "fc") == 1);

  // The product is read by another op too: nothing fuses.
  proto::Program shared = layerProgram(false);
  *shared.mutable_blocks(0)->add_ops() = makeOp("relu", {{"X", {"m"}}}, {{"Out", {"other"}}});
  CHECK(fuseFullyConnected(shared) == 0);

  // The layer writes its input in place: the fused op would read its own output.
  proto::Program inPlace = layerProgram(false);
  inPlace.mutable_blocks(0)->mutable_ops(2)->mutable_outputs(0)->set_names(0, "x");
  inPlace.clear_predictions();
  inPlace.add_predictions("x");
  CHECK(fuseFullyConnected(inPlace) == 0);

  // A weight some op writes is not a param: nothing fuses.
  proto::Program written = layerProgram(false);
  *written.mutable_blocks(0)->mutable_ops()->Add() =
      makeOp("scale", {{"X", {"x"}}}, {{"Out", {"w"}}});
  CHECK(fuseFullyConnected(written) == 0);
}

TEST_CASE("the predictor's fused layers give the unfused scores to the bit, at any batch size",
          "[e2e][serving]") {
  std::string exportDir = exportedCtrModel(scratchDir("fused_layers"));
  // The export's MLP (64, 32, then the output) fuses into three fc ops, none left as mul.
  proto::Program program = requireValue(readExport(exportDir)).program;
  CHECK(fuseFullyConnected(program) == 3 + 1); // and the wide part's linear term of the dense
  CHECK(countOps(program, "mul") == 0);
  PredictorOptions plain, gemm;
  plain.fuseLayers = false;
  gemm.sparseInputs = false; // the sparse layers' sums have another order: the next test
  auto fused = requireValue(Predictor::load(exportDir, gemm));
  auto unfused = requireValue(Predictor::load(exportDir, plain));
  // Batches of 256, then of 3 on the same pooled vars, then 256 again.
  compareScores(*fused, *unfused, {256, 3, 256}, [](const Tensor &got, const Tensor &want) {
    CHECK(std::memcmp(got.raw(), want.raw(), want.bytes()) == 0);
  });
}

TEST_CASE("the predictor's layers fed by a relu, summing only their input's nonzeros, give the "
          "GEMM's scores within 1e-6 (and a relative 1e-5)",
          "[e2e][serving]") {
  if (!sparseInputLayers())
    OAR_SKIP("this CPU has no AVX-512: the predictor keeps the GEMM for every layer");
  // Wide enough that a relu leaves most of a layer's outputs zero (73% here after one epoch; the
  // 64-32 MLP keeps half, which runs the GEMM).
  std::string dir = scratchDir("sparse_layers");
  std::string exportDir = exportedCtrModel(dir, "256,256");
  PredictorOptions gemm;
  gemm.sparseInputs = false;
  auto sparse = requireValue(Predictor::load(exportDir));
  auto dense = requireValue(Predictor::load(exportDir, gemm));
  int differ = 0;
  double worst = 0, worstRelative = 0;
  compareScores(*sparse, *dense, {256, 1, 7}, [&](const Tensor &got, const Tensor &want) {
    for (int64_t i = 0; i < got.numel(); ++i) {
      double error = std::abs(1.0 * got.data<float>()[i] - want.data<float>()[i]);
      worst = std::max(worst, error);
      worstRelative = std::max(worstRelative, error / std::abs(want.data<float>()[i]));
      differ += got.data<float>()[i] != want.data<float>()[i];
    }
  });
  INFO("largest difference " << worst << " (relative " << worstRelative << "), " << differ
                             << " scores differ");
  CHECK(worst <= 1e-6);
  CHECK(worstRelative <= 1e-5); // what a served model must keep of the training job's scores
  CHECK(differ > 0);            // the sparse layers did run

  // oar-predict runs them too, and --no-sparse-inputs keeps the GEMM's scores.
  for (const char *flag : {"", "--no-sparse-inputs"})
    run(binDir() + "/oar-predict " + exportDir + " --data " + ctrData() + "/test.txt -o " + dir +
        "/scores" + flag + ".tsv " + flag);
  std::vector<float> sparseScores = readScores(dir + "/scores.tsv"),
                     gemmScores = readScores(dir + "/scores--no-sparse-inputs.tsv");
  REQUIRE(sparseScores.size() == 10000);
  REQUIRE(gemmScores.size() == sparseScores.size());
  auto first = testBatches(*dense, 256)[0];
  Tensor want = requireValue(dense->predict(first))[0];
  CHECK(std::equal(want.data<float>(), want.data<float>() + 256, gemmScores.begin()));
  CHECK(sparseScores != gemmScores);
}

TEST_CASE("oar-predict --bf16 scores within 1e-2 of f32's, with their test AUC within 2e-3",
          "[e2e][serving]") {
  if (llvm::Error err = checkBf16Layers())
    OAR_SKIP(llvm::toString(std::move(err)));
  std::string dir = scratchDir("bf16_layers");
  std::string exportDir = exportedCtrModel(dir);
  for (const char *flag : {"", "--bf16"})
    run(binDir() + "/oar-predict " + exportDir + " --data " + ctrData() + "/test.txt -o " + dir +
        "/scores" + flag + ".tsv " + flag);
  std::vector<float> f32 = readScores(dir + "/scores.tsv"),
                     bf16 = readScores(dir + "/scores--bf16.tsv");
  REQUIRE(f32.size() == 10000);
  REQUIRE(bf16.size() == f32.size());
  double worst = 0;
  int differ = 0;
  for (size_t i = 0; i < f32.size(); ++i) {
    worst = std::max(worst, std::abs(1.0 * f32[i] - bf16[i]));
    differ += f32[i] != bf16[i];
  }
  INFO("largest difference " << worst << ", " << differ << " scores differ");
  CHECK(worst <= 1e-2);
  CHECK(differ > 0); // the layers did run in bf16
  std::vector<float> labels = criteoLabels(ctrData() + "/test.txt");
  double aucF32 = bucketedAuc(f32, labels), aucBf16 = bucketedAuc(bf16, labels);
  INFO("test auc f32 " << aucF32 << ", bf16 " << aucBf16);
  CHECK(std::abs(aucF32 - aucBf16) <= 2e-3);
}
