// fit_a_line: linear regression on UCI housing, as in Paddle's book chapter 1.
// Usage: example_fit_a_line OUT_DIR [housing.data]  -> OUT_DIR/main.pb, OUT_DIR/startup.pb
#include "api/optimizer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  llvm::ExitOnError exitOnErr("fit_a_line: error: ");
  std::string out = argc > 1 ? argv[1] : ".";
  std::string data = argc > 2 ? argv[2] : "data/uci_housing/housing.data";

  oar::ModelBuilder m(/*seed=*/1);
  std::string x = m.data("x", {13});
  std::string y = m.data("y", {1});
  std::string pred = m.fc(x, 1);
  std::string loss = m.mean(m.squareErrorCost(pred, y));
  m.addPrediction(pred); // what oar-predict writes for each row
  exitOnErr(oar::SGD(0.01f).minimize(m, loss));

  auto feed = [&](const char *split) {
    return oar::FeedSpec{.format = "uci_housing",
                         .files = {data},
                         .columns = {x, y},
                         .batchSize = 20,
                         .epochs = 20,
                         .split = split};
  };
  m.setTrainFeed(feed("train"));
  m.setTestFeed(feed("test"));
  exitOnErr(m.save(out, "fit_a_line example"));
  llvm::outs() << "wrote " << out << "/main.pb and " << out << "/startup.pb\n";
}
