// wide_deep: wide & deep for click-through rate on Criteo-format click logs (oar-gen-ctr writes
// some). The tables are is_distributed: on one machine they are ordinary tables; transpiled,
// their rows live on the pservers.
// Usage: example_wide_deep OUT_DIR TRAIN.txt TEST.txt
#include "api/optimizer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("wide_deep: error: ");
  if (argc != 4) {
    llvm::errs() << "usage: " << argv[0] << " OUT_DIR TRAIN.txt TEST.txt\n";
    return 2;
  }
  const int64_t slots = 26, width = 10, rows = 1 << 22;
  oar::ModelBuilder m(/*seed=*/1);
  std::string keys = m.data("sparse", {slots}, oar::proto::I64); // 63-bit hashes of values
  std::string dense = m.data("dense", {13});
  std::string label = m.data("label", {1});
  std::string ids = m.idMod(keys, rows); // folded into the tables' rows
  // Wide: one weight per value, summed over the slots, plus a linear term on the dense features.
  std::string weights = m.embedding(ids, rows, 1, /*isSparse=*/true, /*isDistributed=*/true,
                                    oar::Initializer::constant(0));
  std::string wide = m.elementwise(
      "elementwise_add", m.reduceSum(m.reshape(weights, {-1, slots}), {1}, /*keepDim=*/true),
      m.fc(dense, 1));
  // Deep: every slot's embedding and the dense features through an MLP.
  std::string vectors =
      m.embedding(ids, rows, width, true, true, oar::Initializer::uniform(-0.05f, 0.05f));
  std::string h = m.concat({m.reshape(vectors, {-1, slots * width}), dense});
  for (int i = 0; i < 3; ++i)
    h = m.fc(h, 400, "relu");
  std::string logit = m.elementwise("elementwise_add", wide, m.fc(h, 1));
  std::string loss = m.mean(m.sigmoidCrossEntropyWithLogits(logit, label));
  std::string click = m.activation(logit, "sigmoid"); // the click probability, served
  m.addMetric(m.auc(click, label));
  m.addPrediction(click);
  exitOnErr(oar::Adagrad(0.02f).minimize(m, loss));

  auto feed = [&](const char *file) {
    return oar::FeedSpec{
        .format = "criteo", .files = {file}, .columns = {label, dense, keys}, .batchSize = 1000};
  };
  m.setTrainFeed(feed(argv[2]));
  m.setTestFeed(feed(argv[3]));
  exitOnErr(m.save(argv[1], "wide_deep example"));
  llvm::outs() << "wrote " << argv[1] << "/main.pb and startup.pb\n";
}
