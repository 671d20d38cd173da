// Predicting a whole feed in order on several threads.
#include "serving/predict_stream.h"

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "feed/batch_source.h"
#include "support/error.h"

namespace oar {

void writeScoreRow(llvm::raw_ostream &os, const std::vector<Tensor> &outputs, int64_t row) {
  char buf[32];
  bool first = true;
  for (const Tensor &t : outputs) {
    int64_t width = t.rank() == 0 || t.dim(0) == 0 ? 1 : t.numel() / t.dim(0);
    for (int64_t j = 0; j < width; ++j) {
      int64_t at = row * width + j;
      double v = t.dtype() == proto::F32   ? t.data<float>()[at]
                 : t.dtype() == proto::F64 ? t.data<double>()[at]
                 : t.dtype() == proto::I64 ? static_cast<double>(t.data<int64_t>()[at])
                                           : static_cast<double>(t.data<int32_t>()[at]);
      int n = std::snprintf(buf, sizeof(buf), t.dtype() == proto::F64 ? "%.17g" : "%.9g", v);
      if (!first)
        os << '\t';
      os.write(buf, n);
      first = false;
    }
  }
  os << '\n';
}

namespace {

/// Batches in flight between the reader, the workers and the writer.
struct Pipeline {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<std::pair<int64_t, std::vector<Tensor>>> todo;
  std::map<int64_t, llvm::Expected<std::vector<Tensor>>> done;
  bool noMore = false;
};

} // namespace

llvm::Expected<int64_t> predictFeed(const Predictor &predictor, const proto::DataFeed &feed,
                                    llvm::raw_ostream &out, int threads) {
  if (threads < 1)
    return makeError("--num-threads {0} must be at least 1", threads);
  proto::DataFeed once = feed;
  once.set_epochs(1);
  once.set_shuffle(false);
  once.set_unlabeled(true); // rows to score need no label
  auto source = openBatchSource(once, predictor.program().blocks(0));
  if (!source)
    return source.takeError();
  // Which of the feed's columns each input takes.
  std::vector<size_t> columnOf;
  for (const std::string &in : predictor.inputs()) {
    auto at = llvm::find((*source)->columns(), in);
    if (at == (*source)->columns().end())
      return makeError("the feed has no column for input {0} (its columns: {1})", in,
                       llvm::join((*source)->columns(), ", "));
    columnOf.push_back(static_cast<size_t>(at - (*source)->columns().begin()));
  }
  Pipeline p;
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w)
    workers.emplace_back([&] {
      for (;;) {
        std::unique_lock<std::mutex> lock(p.mu);
        p.changed.wait(lock, [&] { return !p.todo.empty() || p.noMore; });
        if (p.todo.empty())
          return;
        auto [index, inputs] = std::move(p.todo.front());
        p.todo.pop_front();
        lock.unlock();
        auto result = predictor.predict(inputs);
        lock.lock();
        p.done.emplace(index, std::move(result));
        p.changed.notify_all();
      }
    });
  int64_t read = 0, written = 0, rows = 0;
  llvm::Error failure = llvm::Error::success();
  // Writes the finished batches that come next in order; with `all`, waits for every one.
  auto drain = [&](bool all) {
    std::unique_lock<std::mutex> lock(p.mu);
    for (;;) {
      auto next = p.done.find(written);
      if (next == p.done.end()) {
        if (!all || written == read)
          return;
        p.changed.wait(lock);
        continue;
      }
      llvm::Expected<std::vector<Tensor>> result = std::move(next->second);
      p.done.erase(next);
      ++written;
      if (!result) {
        if (!failure)
          failure = result.takeError();
        else
          llvm::consumeError(result.takeError());
        continue;
      }
      int64_t n = result->empty() ? 0 : (*result)[0].dim(0);
      for (int64_t r = 0; r < n; ++r)
        writeScoreRow(out, *result, r);
      rows += n;
    }
  };
  std::vector<Tensor> batch;
  int64_t epoch = 0;
  for (;;) {
    {
      // At most two batches per worker in flight: wait for room, or for the next to write.
      std::unique_lock<std::mutex> lock(p.mu);
      p.changed.wait(lock, [&] { return read - written < 2 * threads || p.done.count(written); });
    }
    drain(false);
    if (failure)
      break;
    if (read - written >= 2 * threads)
      continue;
    auto more = (*source)->next(batch, epoch);
    if (!more) {
      failure = more.takeError();
      break;
    }
    if (!*more)
      break;
    std::vector<Tensor> inputs;
    for (size_t c : columnOf)
      inputs.push_back(batch[c].clone());
    std::lock_guard<std::mutex> lock(p.mu);
    p.todo.emplace_back(read++, std::move(inputs));
    p.changed.notify_all();
  }
  {
    std::lock_guard<std::mutex> lock(p.mu);
    p.noMore = true;
    p.changed.notify_all();
  }
  drain(true);
  for (std::thread &t : workers)
    t.join();
  if (failure)
    return failure;
  return rows;
}

} // namespace oar
