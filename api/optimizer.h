// Optimizers: minimize(loss) appends autodiff and one update op per parameter.
#pragma once

#include "api/backward.h"
#include "api/layers.h"

namespace oar {

/// Base of SGD, Momentum, Adam and Adagrad. The learning rate is a persistable [1] var
/// (`learning_rate_0`; the next optimizer of the same model gets `learning_rate_1`) so pservers
/// and schedules can change it. Several optimizers may share a model when each updates its own
/// parameters (a param updated already is left to its first optimizer).
class Optimizer {
public:
  explicit Optimizer(float learningRate) : learningRate_(learningRate) {}
  virtual ~Optimizer() = default;
  /// Appends backward ops for `loss`, then the update ops (role OPTIMIZE) with their state
  /// created as persistable vars initialised by the startup program. The first loss minimized
  /// is the one the trainer reports. Returns the model's status() if building it failed.
  llvm::Expected<std::vector<ParamGrad>> minimize(ModelBuilder &model, llvm::StringRef loss,
                                                  const std::set<std::string> &noGradSet = {});

protected:
  virtual proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) = 0;
  /// Optimizer state shaped like the parameter, starting at `value`.
  static std::string stateLike(ModelBuilder &model, llvm::StringRef param, llvm::StringRef kind,
                               float value);
  /// Optimizer state with one value per row of the parameter ([rows]), starting at `value`.
  static std::string statePerRow(ModelBuilder &model, llvm::StringRef param, llvm::StringRef kind,
                                 float value);
  /// Whether the gradient is selected rows (a sparse embedding's), so only its rows change.
  static bool isSparseGrad(ModelBuilder &model, const ParamGrad &pg);
  float learningRate_;
};

class SGD : public Optimizer {
public:
  using Optimizer::Optimizer;

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;
};

class Momentum : public Optimizer {
public:
  Momentum(float learningRate, float momentum, bool nesterov = false)
      : Optimizer(learningRate), momentum_(momentum), nesterov_(nesterov) {}

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;

private:
  float momentum_;
  bool nesterov_;
};

/// With a selected-rows gradient the update is lazy: only the rows it holds change, and each row
/// keeps its own beta^t (Beta1Pow/Beta2Pow are [rows]) advanced when it is touched, so a row's
/// bias correction counts its own updates.
class Adam : public Optimizer {
public:
  Adam(float learningRate, float beta1 = 0.9f, float beta2 = 0.999f, float epsilon = 1e-8f)
      : Optimizer(learningRate), beta1_(beta1), beta2_(beta2), epsilon_(epsilon) {}

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;

private:
  float beta1_, beta2_, epsilon_;
};

/// With `rowWise`, each parameter keeps one accumulator per row (the mean of the row's squared
/// gradient is added to it) instead of one per element.
class Adagrad : public Optimizer {
public:
  Adagrad(float learningRate, float epsilon = 1e-6f, bool rowWise = false)
      : Optimizer(learningRate), epsilon_(epsilon), rowWise_(rowWise) {}

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;

private:
  float epsilon_;
  bool rowWise_;
};

} // namespace oar
