// Builds a small regression model with the installed oar API, trains it a few steps, checks
// that the loss fell.
#include "api/optimizer.h"
#include "executor/executor.h"
#include "llvm/Support/raw_ostream.h"

int main() {
  llvm::ExitOnError exitOnErr("consumer: ");
  oar::ModelBuilder m;
  std::string x = m.data("x", {2}), y = m.data("y", {1});
  std::string loss = m.mean(m.squareErrorCost(m.fc(x, 1), y));
  exitOnErr(oar::SGD(0.1f).minimize(m, loss));
  oar::Executor exec;
  oar::Scope scope;
  exitOnErr(exec.run(m.startup(), scope));
  scope.get("x") = oar::Tensor::fromVector<float>({4, 2}, {0, 0, 1, 0, 0, 1, 1, 1});
  scope.get("y") = oar::Tensor::fromVector<float>({4, 1}, {1, 3, 0, 2}); // y = 1 + 2a - b
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    exitOnErr(exec.run(m.main(), scope));
    last = scope.find(loss)->data<float>()[0];
    if (step == 0)
      first = last;
  }
  llvm::outs() << "consumer: loss " << first << " -> " << last << "\n";
  return last < first * 0.01f ? 0 : 1;
}
