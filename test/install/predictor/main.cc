// Loads an export with the installed oar::Predictor and scores one row of 13 features (given as
// arguments) from two threads at once; prints the score, as oar-predict writes it.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "serving/predictor.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  if (argc != 15) {
    llvm::errs() << "usage: predictor_consumer EXPORT_DIR X1 .. X13\n";
    return 2;
  }
  auto predictor = oar::Predictor::load(argv[1]);
  if (!predictor) {
    llvm::errs() << "predictor_consumer: " << llvm::toString(predictor.takeError()) << "\n";
    return 1;
  }
  std::vector<float> row;
  for (int i = 2; i < 15; ++i)
    row.push_back(std::strtof(argv[i], nullptr));
  oar::Tensor x = oar::Tensor::fromVector<float>({1, 13}, row);
  float scores[2] = {0, 0};
  auto score = [&](int i) {
    auto out = (*predictor)->predict({x});
    scores[i] = out ? (*out)[0].data<float>()[0] : -1e30f;
    if (!out)
      llvm::consumeError(out.takeError());
  };
  std::thread other(score, 1);
  score(0);
  other.join();
  if (scores[0] != scores[1])
    return 1;
  std::printf("%.9g\n", scores[0]);
  return 0;
}
