// Optimizers: minimize(loss) appends autodiff and one update op per parameter.
#pragma once

#include "api/backward.h"
#include "api/layers.h"

namespace oar {

/// A learning-rate schedule (ops/optimizers.cc): with t the updates made before this one, warm-up
/// gives lr * (t + 1) / warmupSteps while t < warmupSteps; after it, with u = t - warmupSteps,
/// step: lr * decayRate^floor(u / decaySteps), exponential: lr * decayRate^(u / decaySteps),
/// cosine: lr * (1 + cos(pi * min(u, decaySteps) / decaySteps)) / 2.
struct LrSchedule {
  std::string type = "constant"; // constant | step | exponential | cosine
  int64_t warmupSteps = 0, decaySteps = 1;
  float decayRate = 1;
  bool active() const { return type != "constant" || warmupSteps > 0; }
};

/// Base of SGD, Momentum, Adam, AdamW and Adagrad. The learning rate is a persistable [1] var
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

  /// L2 decay: weightDecay * param added to each gradient (a sparse one: its rows only), as
  /// Paddle's L2Decay and PyTorch's weight_decay. AdamW decouples it instead.
  void setWeightDecay(float weightDecay) { weightDecay_ = weightDecay; }
  /// Scales all dense gradients together so their global norm is at most `maxNorm` (0: off),
  /// before the weight decay, as torch.nn.utils.clip_grad_norm_.
  void setClipGlobalNorm(float maxNorm) { clipGlobalNorm_ = maxNorm; }
  /// The learning rate's schedule; each param's update op counts its own updates.
  void setSchedule(const LrSchedule &schedule) { schedule_ = schedule; }
  /// Whether the schedule reaches the embeddings with sparse gradients too (the default). Off,
  /// they keep the base rate: a distributed table's pservers have no schedule, so a model whose
  /// tables train there schedules its dense params only.
  void setScheduleTables(bool on) { scheduleTables_ = on; }

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
  float weightDecay_ = 0, clipGlobalNorm_ = 0;
  LrSchedule schedule_;
  bool scheduleTables_ = true;

private:
  /// The clip op over the dense gradients of `grads`, when clipping is on.
  void appendClip(ModelBuilder &model, const std::vector<ParamGrad> &grads);
  /// Decay and schedule attrs on an update op, and its update counter when scheduled.
  void addDecayAndSchedule(ModelBuilder &model, const ParamGrad &pg, proto::Op &op);
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

/// Adam with decoupled weight decay (torch.optim.AdamW): param -= lr * weightDecay * param before
/// each Adam step, lr being the scheduled rate. setWeightDecay sets the same factor.
class AdamW : public Adam {
public:
  AdamW(float learningRate, float weightDecay = 0.01f, float beta1 = 0.9f, float beta2 = 0.999f,
        float epsilon = 1e-8f)
      : Adam(learningRate, beta1, beta2, epsilon) {
    weightDecay_ = weightDecay;
  }

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;
};

/// With `rowWise`, each parameter keeps one accumulator per row (the mean of the row's squared
/// gradient is added to it) instead of one per element.
class Adagrad : public Optimizer {
public:
  /// `initialAccumulator`: the squared-gradient sum each weight starts from (TensorFlow's
  /// initial_accumulator_value; 0 is Paddle's): above 0 it damps the first steps, which a
  /// weight seen once (a rare id) would otherwise take at the full rate whatever its gradient.
  Adagrad(float learningRate, float epsilon = 1e-6f, bool rowWise = false,
          float initialAccumulator = 0)
      : Optimizer(learningRate), epsilon_(epsilon), rowWise_(rowWise),
        initialAccumulator_(initialAccumulator) {}

protected:
  proto::Op makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) override;

private:
  float epsilon_;
  bool rowWise_;
  float initialAccumulator_;
};

} // namespace oar
