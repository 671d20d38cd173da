// mnist_mlp: a 784-128-64-10 ReLU MLP classifier trained with Adam.
// Usage: example_mnist_mlp OUT_DIR TRAIN_IMAGES TRAIN_LABELS TEST_IMAGES TEST_LABELS
#include "api/optimizer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("mnist_mlp: error: ");
  if (argc != 6) {
    llvm::errs() << "usage: " << argv[0]
                 << " OUT_DIR TRAIN_IMAGES TRAIN_LABELS TEST_IMAGES TEST_LABELS\n";
    return 2;
  }
  oar::ModelBuilder m(/*seed=*/1);
  std::string img = m.data("img", {784});
  std::string label = m.data("label", {1}, oar::proto::I64);
  std::string h = m.fc(m.fc(img, 128, "relu"), 64, "relu");
  std::string logits = m.fc(h, 10);
  std::string loss = m.mean(m.softmaxWithCrossEntropy(logits, label));
  m.addMetric(m.accuracy(logits, label));
  m.addPrediction(m.activation(logits, "softmax")); // class probabilities, served
  exitOnErr(oar::Adam(0.001f).minimize(m, loss));

  auto feed = [&](const char *images, const char *labels) {
    return oar::FeedSpec{
        .format = "mnist_idx", .files = {images, labels}, .columns = {img, label}, .batchSize = 64};
  };
  m.setTrainFeed(feed(argv[2], argv[3]));
  m.setTestFeed(feed(argv[4], argv[5]));
  exitOnErr(m.save(argv[1], "mnist_mlp example"));
  llvm::outs() << "wrote " << argv[1] << "/main.pb and startup.pb\n";
}
