// libFuzzer target: the schema feeds' line formats. Byte 0 picks the format (csv, tsv, slot,
// libffm); the rest is the file, read batch by batch through a schema with a label, an integer
// and a string slot, a log1p dense column and a bucketized one. Errors are expected and dropped.
#include "feed/batch_source.h"
#include "feed/schema.h"
#include "fuzz/fuzz_input.h"

using namespace oar;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  static const char *formats[] = {"csv", "tsv", "slot", "libffm"};
  const char *format = formats[data[0] % 4];
  bool ffm = data[0] % 4 == 3; // libffm names its fields by number
  auto schema = ffm ? schemaFromFlags("label", "3:log1p,4:bucketize:1:10", "0,1:int")
                    : schemaFromFlags("clicked", "price:log1p,n:bucketize:1:10", "user,hour:int");
  if (!schema) {
    llvm::consumeError(schema.takeError());
    return 0;
  }
  fuzz::MemoryFile file(data + 1, size - 1);
  proto::Block block;
  declareVar(block, "label", proto::F32, {-1, 1});
  declareVar(block, "dense", proto::F32, {-1, 1});
  declareVar(block, "sparse", proto::I64, {-1, 3});
  proto::DataFeed feed;
  feed.set_format(format);
  feed.add_files(file.path());
  for (const char *c : {"label", "dense", "sparse"})
    feed.add_columns(c);
  feed.set_batch_size(3);
  feed.set_epochs(1);
  *feed.mutable_schema() = *schema;
  auto source = openBatchSource(feed, block);
  if (!source) {
    llvm::consumeError(source.takeError());
    return 0;
  }
  std::vector<Tensor> batch;
  int64_t epoch;
  for (;;) {
    auto more = (*source)->next(batch, epoch);
    if (!more) {
      llvm::consumeError(more.takeError());
      return 0;
    }
    if (!*more)
      return 0;
  }
}
