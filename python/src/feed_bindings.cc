// The file formats of the C++ API (csv and tsv with a schema, criteo, slot, libffm, libsvm, npy,
// mnist_idx, uci_housing) as batches of NumPy arrays: a program's train or test feed, read by
// the same BatchSource a trainer reads.
#include <pybind11/stl.h>

#include "feed/batch_source.h"
#include "python/src/bindings.h"
#include "python/src/errors.h"
#include "python/src/tensor_bridge.h"

namespace py = pybind11;

namespace oar::python {

namespace {

class FeedReader {
public:
  FeedReader(const proto::Program &prog, const std::string &which, int64_t trainerId,
             int64_t trainers) {
    if (which != "train" && which != "test")
      throw OarError("FeedReader: which must be \"train\" or \"test\", got \"" + which + "\"");
    bool train = which == "train";
    if (train ? !prog.has_train_feed() : !prog.has_test_feed())
      throw OarError("the program has no " + which + " feed (set_train_feed / set_test_feed)");
    proto::DataFeed feed = train ? prog.train_feed() : prog.test_feed();
    if (!train)
      feed.set_epochs(1), feed.set_shuffle(false); // a test feed is read once, in order
    source_ = unwrap(openBatchSource(feed, prog.blocks(0), trainerId, trainers));
  }
  const std::vector<std::string> &columns() const { return source_->columns(); }
  /// The next batch as {column: array}, or None after the last epoch.
  py::object next() {
    std::vector<Tensor> batch;
    int64_t epoch = 0;
    llvm::Expected<bool> more = false;
    {
      py::gil_scoped_release noGil;
      more = source_->next(batch, epoch);
    }
    if (!unwrap(std::move(more)))
      return py::none();
    py::dict out;
    for (size_t i = 0; i < batch.size(); ++i)
      // A source fills the fresh tensors of this call's batch: each is the array's alone.
      out[py::str(source_->columns()[i])] = arrayOver(std::move(batch[i]));
    epoch_ = epoch;
    return out;
  }
  int64_t epoch() const { return epoch_; }
  int64_t batchesPerEpoch() const { return source_->batchesPerEpoch(); }
  void rewind() { throwIfError(source_->rewind()); }

private:
  std::unique_ptr<BatchSource> source_;
  int64_t epoch_ = 0;
};

} // namespace

void bindFeeds(py::module_ &m) {
  py::class_<FeedReader>(m, "FeedReader", "a program's train or test feed as batches")
      .def(py::init<const proto::Program &, const std::string &, int64_t, int64_t>(),
           py::arg("program"), py::arg("which") = "train", py::arg("trainer_id") = 0,
           py::arg("trainers") = 1)
      .def_property_readonly("columns", &FeedReader::columns)
      .def_property_readonly("epoch", &FeedReader::epoch)
      .def_property_readonly("batches_per_epoch", &FeedReader::batchesPerEpoch)
      .def("next", &FeedReader::next)
      .def("rewind", &FeedReader::rewind);
}

} // namespace oar::python
