// mnist_lenet: LeNet-5 style CNN (conv 5x5 x6, pool, conv 5x5 x16, pool, fc 10) trained with SGD.
// Usage: example_mnist_lenet OUT_DIR TRAIN_IMAGES TRAIN_LABELS TEST_IMAGES TEST_LABELS
#include "api/optimizer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("mnist_lenet: error: ");
  if (argc != 6) {
    llvm::errs() << "usage: " << argv[0]
                 << " OUT_DIR TRAIN_IMAGES TRAIN_LABELS TEST_IMAGES TEST_LABELS\n";
    return 2;
  }
  oar::ModelBuilder m(/*seed=*/1);
  std::string img = m.data("img", {1, 28, 28});
  std::string label = m.data("label", {1}, oar::proto::I64);
  std::string c1 = m.pool2d(m.conv2d(img, 6, 5, 1, 0, "relu"), 2);
  std::string c2 = m.pool2d(m.conv2d(c1, 16, 5, 1, 0, "relu"), 2);
  std::string logits = m.fc(c2, 10);
  std::string loss = m.mean(m.softmaxWithCrossEntropy(logits, label));
  m.addMetric(m.accuracy(logits, label));
  m.addPrediction(m.activation(logits, "softmax")); // class probabilities, served
  exitOnErr(oar::SGD(0.05f).minimize(m, loss));

  auto feed = [&](const char *images, const char *labels) {
    return oar::FeedSpec{
        .format = "mnist_idx", .files = {images, labels}, .columns = {img, label}, .batchSize = 32};
  };
  m.setTrainFeed(feed(argv[2], argv[3]));
  m.setTestFeed(feed(argv[4], argv[5]));
  exitOnErr(m.save(argv[1], "mnist_lenet example"));
  llvm::outs() << "wrote " << argv[1] << "/main.pb and startup.pb\n";
}
