// oar::Predictor on an export: latency (p50, p99) at batch 1 and 256 on one thread, and rows/s
// with 1 and 2 threads (each a caller of predict() with one compute thread, as a server's
// request threads are). With --dump DIR it also writes the rows it predicts (DIR/<input>.npy)
// and its scores of the first 256 (DIR/scores.npy), for the same measurement in PyTorch
// (bench/torch_predict.py; bench/predict.sh runs both).
//
// Usage: bench_predict EXPORT_DIR --data FILE [--rows N] [--seconds S] [--dump DIR] [--bf16]
//        [--no-sparse-inputs]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "executor/npy.h"
#include "feed/batch_source.h"
#include "serving/predictor.h"
#include "support/error.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using Clock = std::chrono::steady_clock;

static cl::opt<std::string> exportDir(cl::Positional, cl::Required, cl::desc("<export dir>"));
static cl::opt<std::string> data("data", cl::desc("criteo rows to predict"), cl::Required);
static cl::opt<int64_t> rowCount("rows", cl::desc("rows read from --data"), cl::init(8192));
static cl::opt<double> seconds("seconds", cl::desc("time per throughput run"), cl::init(3));
static cl::opt<bool> bf16("bf16", cl::desc("run the layers in bfloat16 (PredictorOptions)"));
static cl::opt<bool> noSparse("no-sparse-inputs",
                              cl::desc("keep the GEMM for layers fed by a relu (PredictorOptions)"));
static cl::opt<std::string> dumpDir("dump", cl::desc("write the rows and scores here"));

static ExitOnError exitOnErr("bench_predict: error: ");

/// Rows [begin, begin + n) of every input.
static std::vector<oar::Tensor> slice(const std::vector<oar::Tensor> &all, int64_t begin,
                                      int64_t n) {
  std::vector<oar::Tensor> out;
  for (const oar::Tensor &t : all) {
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    int64_t rowBytes = static_cast<int64_t>(t.bytes()) / dims[0];
    dims[0] = n;
    oar::Tensor part(t.dtype(), dims);
    std::memcpy(part.raw(), static_cast<const char *>(t.raw()) + begin * rowBytes, n * rowBytes);
    out.push_back(std::move(part));
  }
  return out;
}

static double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * (v.size() - 1) + 0.5))];
}

int main(int argc, char **argv) {
  cl::ParseCommandLineOptions(argc, argv, "bench_predict: oar::Predictor latency and rows/s\n");
  oar::PredictorOptions options;
  options.bf16Layers = bf16;
  options.sparseInputs = !noSparse;
  auto predictor = exitOnErr(oar::Predictor::load(exportDir, options));
  // Lines name the precision: bench/predict.sh runs f32 and bf16 and compares each with torch's.
  std::string who = bf16 ? "oar bf16" : "oar";
  // The rows, read once through the export's feed.
  oar::proto::DataFeed feed = predictor->program().test_feed();
  feed.clear_files();
  feed.add_files(data);
  feed.set_batch_size(rowCount);
  feed.set_limit(rowCount);
  auto source = exitOnErr(oar::openBatchSource(feed, predictor->program().blocks(0)));
  std::vector<oar::Tensor> batch, rows;
  int64_t epoch = 0;
  if (!exitOnErr(source->next(batch, epoch)))
    exitOnErr(oar::makeError("{0}: no rows", data));
  for (const std::string &in : predictor->inputs()) {
    auto at = std::find(source->columns().begin(), source->columns().end(), in);
    rows.push_back(batch[at - source->columns().begin()]);
  }
  int64_t n = rows[0].dim(0);
  if (n < 256)
    exitOnErr(oar::makeError("{0}: {1} rows; the bench needs 256 or more", data, n));
  if (!dumpDir.empty()) {
    for (size_t i = 0; i < rows.size(); ++i)
      exitOnErr(oar::writeNpy(dumpDir + "/" + predictor->inputs()[i] + ".npy", rows[i]));
    auto scores = exitOnErr(predictor->predict(slice(rows, 0, 256)));
    exitOnErr(oar::writeNpy(dumpDir + "/scores.npy", scores[0]));
  }
  outs() << formatv("oar: {0} rows, inputs {1}\n", n, llvm::join(predictor->inputs(), ", "));
  // Latency: one caller, one compute thread, batches taken in turn from the rows.
  for (int64_t size : {int64_t(1), int64_t(256)}) {
    std::vector<double> us;
    int calls = size == 1 ? 4000 : 400;
    for (int i = 0; i < calls + calls / 10; ++i) {
      auto in = slice(rows, (i * size) % (n - size + 1), size);
      auto start = Clock::now();
      exitOnErr(predictor->predict(in));
      double t = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
      if (i >= calls / 10) // the first tenth warms up
        us.push_back(t);
    }
    outs() << formatv("{0} latency batch {1}: p50 {2:f1} us, p99 {3:f1} us\n", who, size,
                      percentile(us, 0.5), percentile(us, 0.99));
  }
  // Rows/s: T callers, batches of 256, for `seconds`.
  std::vector<std::vector<oar::Tensor>> batches;
  for (int64_t b = 0; b + 256 <= n; b += 256)
    batches.push_back(slice(rows, b, 256));
  for (int threads : {1, 2}) {
    std::atomic<int64_t> done{0};
    std::atomic<bool> stop{false};
    auto start = Clock::now();
    auto call = [&](int t) {
      for (size_t i = t; !stop; i += threads) {
        exitOnErr(predictor->predict(batches[i % batches.size()]));
        done += 256;
        if (t == 0 && Clock::now() - start > std::chrono::duration<double>(seconds.getValue()))
          stop = true;
      }
    };
    // One caller runs on the main thread, as bench/torch_predict.py's does.
    std::vector<std::thread> callers;
    for (int t = 1; t < threads; ++t)
      callers.emplace_back(call, t);
    call(0);
    for (std::thread &c : callers)
      c.join();
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    outs() << formatv("{0} rows/s batch 256, {1} thread(s): {2:f0}\n", who, threads, done / secs);
  }
  return 0;
}
