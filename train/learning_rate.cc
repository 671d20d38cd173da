// Setting the base learning rate.
#include "train/learning_rate.h"

#include <cmath>

#include "ir/names.h"
#include "support/error.h"
#include "llvm/ADT/STLExtras.h"

namespace oar {

std::vector<std::string> learningRateVars(const proto::Program &program) {
  std::vector<std::string> vars;
  for (const proto::Block &block : program.blocks())
    for (const proto::Op &op : block.ops())
      for (const std::string &v : opInputs(op, "LearningRate"))
        if (!llvm::is_contained(vars, v))
          vars.push_back(v);
  return vars;
}

llvm::Error setLearningRate(const proto::Program &program, Scope &scope, float rate) {
  if (!(rate > 0) || !std::isfinite(rate))
    return makeError("--lr {0} must be positive and finite", rate);
  for (const std::string &v : learningRateVars(program)) {
    const Tensor *old = scope.find(v);
    bool f64 = old && old->initialized() && old->dtype() == proto::F64; // a gradient check's
    Tensor t(f64 ? proto::F64 : proto::F32, {1});
    if (f64)
      t.data<double>()[0] = rate;
    else
      t.data<float>()[0] = rate;
    scope.get(v) = std::move(t);
  }
  return llvm::Error::success();
}

} // namespace oar
