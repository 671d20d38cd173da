// deepfm: DeepFM for click-through rate on Criteo-format click logs: a first-order term, a
// factorisation machine over the slots' embeddings and an MLP on them, summed into one logit.
// The tables are is_distributed: transpiled, their rows live on the pservers.
// Usage: example_deepfm OUT_DIR TRAIN.txt TEST.txt
#include "api/optimizer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("deepfm: error: ");
  if (argc != 4) {
    llvm::errs() << "usage: " << argv[0] << " OUT_DIR TRAIN.txt TEST.txt\n";
    return 2;
  }
  const int64_t slots = 26, width = 10, rows = 1 << 22;
  oar::ModelBuilder m(/*seed=*/1);
  std::string keys = m.data("sparse", {slots}, oar::proto::I64);
  std::string dense = m.data("dense", {13});
  std::string label = m.data("label", {1});
  std::string ids = m.idMod(keys, rows);
  std::string weights = m.embedding(ids, rows, 1, /*isSparse=*/true, /*isDistributed=*/true,
                                    oar::Initializer::constant(0));
  std::string first = m.elementwise(
      "elementwise_add", m.reduceSum(m.reshape(weights, {-1, slots}), {1}, /*keepDim=*/true),
      m.fc(dense, 1));
  std::string v = m.embedding(ids, rows, width, true, true,
                              oar::Initializer::uniform(-0.05f, 0.05f)); // [B, slots, width]
  // Every pair of slots dotted: 0.5 * sum_k ((sum_i v_ik)^2 - sum_i v_ik^2).
  std::string sum = m.reduceSum(v, {1});
  std::string pairs = m.elementwise("elementwise_sub", m.elementwise("elementwise_mul", sum, sum),
                                    m.reduceSum(m.elementwise("elementwise_mul", v, v), {1}));
  std::string second = m.scale(m.reduceSum(pairs, {1}, /*keepDim=*/true), 0.5f);
  std::string h = m.concat({m.reshape(v, {-1, slots * width}), dense});
  for (int i = 0; i < 3; ++i)
    h = m.fc(h, 400, "relu");
  std::string logit =
      m.elementwise("elementwise_add", m.elementwise("elementwise_add", first, second), m.fc(h, 1));
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
  exitOnErr(m.save(argv[1], "deepfm example"));
  llvm::outs() << "wrote " << argv[1] << "/main.pb and startup.pb\n";
}
