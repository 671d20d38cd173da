// Click logs for the CTR tests.
#include "test/helpers/ctr_data.h"

#include <unistd.h>

#include "executor/executor.h"
#include "test/helpers/expect.h"
#include "tools/common/ctr_generator.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"

namespace oar {

proto::Block criteoBlock() {
  proto::Block b;
  declareVar(b, "label", proto::F32, {-1, 1});
  declareVar(b, "dense", proto::F32, {-1, 13});
  declareVar(b, "sparse", proto::I64, {-1, 26});
  return b;
}

proto::DataFeed criteoFeed(std::vector<std::string> files, int64_t batch) {
  proto::DataFeed f;
  f.set_format("criteo");
  for (auto &x : files)
    f.add_files(x);
  for (const char *c : {"label", "dense", "sparse"})
    f.add_columns(c);
  f.set_batch_size(batch);
  f.set_epochs(1);
  return f;
}

namespace {

/// oar-gen-ctr's files with `lines` training lines, in a scratch directory removed at exit.
struct Data {
  std::string dir;
  Data(int64_t lines, const std::string &name)
      : dir(scratchDir(name + "." + std::to_string(getpid()))) {
    CtrGenOptions opts;
    opts.trainLines = lines;
    opts.testLines = 10000;
    requireValue(generateCtr(opts, dir));
  }
  ~Data() { llvm::sys::fs::remove_directories(dir); }
};

} // namespace

const std::string &ctrData() {
  static const Data data(40000, "ctr_data");
  return data.dir;
}

const std::string &moreCtrData() {
  static const Data data(160000, "more_ctr_data");
  return data.dir;
}

std::string testLine(const std::string &output) {
  size_t at = output.rfind("test: ");
  REQUIRE(at != std::string::npos);
  return output.substr(at, output.find('\n', at) - at);
}

double aucOf(const std::string &output) {
  std::string line = testLine(output);
  size_t a = line.find(", auc ");
  REQUIRE(a != std::string::npos);
  return std::stod(line.substr(a + 6));
}

std::vector<float> criteoLabels(const std::string &path) {
  std::vector<float> labels;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  std::string text = readFile(path);
  llvm::StringRef(text).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines)
    labels.push_back(line.take_until([](char c) { return c == '\t'; }) == "1" ? 1.0f : 0.0f);
  return labels;
}

double bucketedAuc(const std::vector<float> &scores, const std::vector<float> &labels) {
  REQUIRE(scores.size() == labels.size());
  auto n = static_cast<int64_t>(scores.size());
  Scope scope;
  scope.get("p") = Tensor::fromVector<float>({n, 1}, scores);
  scope.get("y") = Tensor::fromVector<float>({n, 1}, labels);
  scope.get("pos") = Tensor(proto::I64, {4096});
  scope.get("neg") = Tensor(proto::I64, {4096});
  proto::Op op = makeOp(
      "auc", {{"Predict", {"p"}}, {"Label", {"y"}}, {"StatPos", {"pos"}}, {"StatNeg", {"neg"}}},
      {{"AUC", {"auc"}}, {"StatPosOut", {"pos"}}, {"StatNegOut", {"neg"}}},
      {{"num_thresholds", int64_t(4095)}});
  REQUIRE_OK(Executor().runOp(op, scope, "bucketed auc"));
  Tensor auc = scope.get("auc");
  return auc.dtype() == proto::F64 ? auc.data<double>()[0] : auc.data<float>()[0];
}

std::vector<float> readScores(const std::string &path) {
  std::vector<float> scores;
  llvm::SmallVector<llvm::StringRef, 0> lines;
  std::string text = readFile(path);
  llvm::StringRef(text).split(lines, '\n', -1, false);
  for (llvm::StringRef line : lines) {
    double v = 0;
    REQUIRE_FALSE(line.take_until([](char c) { return c == '\t'; }).getAsDouble(v));
    scores.push_back(static_cast<float>(v));
  }
  return scores;
}

} // namespace oar
