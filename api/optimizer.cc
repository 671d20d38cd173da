// The optimizers.
#include "api/optimizer.h"

#include <cmath>

#include "ir/names.h"
#include "support/error.h"

namespace oar {

llvm::Expected<std::vector<ParamGrad>> Optimizer::minimize(ModelBuilder &model,
                                                           llvm::StringRef loss,
                                                           const std::set<std::string> &noGradSet) {
  if (llvm::Error err = model.status())
    return err;
  if (!(learningRate_ > 0) || !std::isfinite(learningRate_))
    return makeError("minimize: learning rate {0} must be positive and finite", learningRate_);
  if (!(weightDecay_ >= 0) || !std::isfinite(weightDecay_))
    return makeError("minimize: weight decay {0} must be 0 or more and finite", weightDecay_);
  if (schedule_.active()) {
    const LrSchedule &l = schedule_;
    bool decays = l.type == "step" || l.type == "exponential";
    if ((l.type != "constant" && !decays && l.type != "cosine") || l.warmupSteps < 0 ||
        (l.type != "constant" && l.decaySteps <= 0) || (decays && !(l.decayRate > 0)))
      return makeError("minimize: learning-rate schedule {0} (warm-up {1}, decay steps {2}, rate "
                       "{3}) is not one oar runs: constant, step, exponential or cosine, decay "
                       "steps > 0, a rate > 0 for step and exponential",
                       l.type, l.warmupSteps, l.decaySteps, l.decayRate);
  }
  if (!(clipGlobalNorm_ >= 0) || !std::isfinite(clipGlobalNorm_))
    return makeError("minimize: the global norm to clip to, {0}, must be 0 (off) or more",
                     clipGlobalNorm_);
  // A param another optimizer updates already would be updated twice per step.
  std::set<std::string> updated;
  for (const proto::Op &op : model.main().blocks(0).ops())
    if (op.role() == proto::OPTIMIZE)
      for (const std::string &p : opOutputs(op, "ParamOut"))
        updated.insert(p);
  std::set<std::string> skip = noGradSet;
  skip.insert(updated.begin(), updated.end());
  auto grads = appendBackward(model.main(), loss, skip);
  if (!grads)
    return grads.takeError();
  if (grads->empty())
    return makeError("minimize: loss {0} depends on no trainable parameter{1}", loss,
                     updated.empty() ? "" : " that no other optimizer updates");
  // Each optimizer owns its learning rate: learning_rate_0, learning_rate_1, ...
  std::string lr =
      model.createPersistable(model.uniqueLayerName("learning_rate"), {1}, learningRate_);
  appendClip(model, *grads);
  for (const ParamGrad &pg : *grads) {
    proto::Op op = makeUpdate(model, pg, lr);
    addDecayAndSchedule(model, pg, op);
    op.set_role(proto::OPTIMIZE);
    *model.main().mutable_blocks(0)->add_ops() = std::move(op);
  }
  if (llvm::Error err = model.status())
    return err;
  return grads;
}

void Optimizer::appendClip(ModelBuilder &model, const std::vector<ParamGrad> &grads) {
  if (clipGlobalNorm_ == 0)
    return;
  std::vector<std::string> dense; // a sparse embedding's selected rows are left as they are
  for (const ParamGrad &pg : grads)
    if (!isSparseGrad(model, pg))
      dense.push_back(pg.grad);
  if (dense.empty())
    return;
  proto::Op op = makeOp("clip_by_global_norm", {{"X", dense}}, {{"Out", dense}},
                        {{"max_norm", clipGlobalNorm_}});
  op.set_role(proto::BACKWARD);
  *model.main().mutable_blocks(0)->add_ops() = std::move(op);
}

void Optimizer::addDecayAndSchedule(ModelBuilder &model, const ParamGrad &pg, proto::Op &op) {
  if (weightDecay_ != 0 || op.type() == "adamw") // adamw's default is not 0
    setAttr(op, "weight_decay", weightDecay_);
  if (!schedule_.active() || (!scheduleTables_ && isSparseGrad(model, pg)))
    return;
  setAttr(op, "lr_schedule", schedule_.type);
  setAttr(op, "warmup_steps", schedule_.warmupSteps);
  setAttr(op, "lr_decay_steps", schedule_.decaySteps);
  setAttr(op, "lr_decay_rate", schedule_.decayRate);
  // Updates made before this one: on a pserver, each block of the param counts its own.
  std::string step = model.createPersistable(accumulatorName(pg.param, "step"), {1}, 0);
  proto::Slot *in = op.add_inputs(), *out = op.add_outputs();
  in->set_slot("Step");
  in->add_names(step);
  out->set_slot("StepOut");
  out->add_names(step);
}

std::string Optimizer::stateLike(ModelBuilder &model, llvm::StringRef param, llvm::StringRef kind,
                                 float value) {
  const proto::Var *p = findVar(model.main().blocks(0), param);
  return model.createPersistable(accumulatorName(param, kind), dimsOf(p->type()), value);
}

std::string Optimizer::statePerRow(ModelBuilder &model, llvm::StringRef param, llvm::StringRef kind,
                                   float value) {
  const proto::Var *p = findVar(model.main().blocks(0), param);
  return model.createPersistable(accumulatorName(param, kind), {p->type().dims(0)}, value);
}

bool Optimizer::isSparseGrad(ModelBuilder &model, const ParamGrad &pg) {
  const proto::Var *g = findVar(model.main().blocks(0), pg.grad);
  return g && g->kind() == proto::SELECTED_ROWS;
}

proto::Op SGD::makeUpdate(ModelBuilder &, const ParamGrad &pg, llvm::StringRef lr) {
  return makeOp("sgd", {{"Param", {pg.param}}, {"Grad", {pg.grad}}, {"LearningRate", {lr.str()}}},
                {{"ParamOut", {pg.param}}});
}

proto::Op Momentum::makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) {
  std::string v = stateLike(model, pg.param, "velocity", 0);
  return makeOp(
      "momentum",
      {{"Param", {pg.param}}, {"Grad", {pg.grad}}, {"Velocity", {v}}, {"LearningRate", {lr.str()}}},
      {{"ParamOut", {pg.param}}, {"VelocityOut", {v}}},
      {{"mu", momentum_}, {"use_nesterov", nesterov_}});
}

proto::Op Adam::makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) {
  std::string m1 = stateLike(model, pg.param, "moment1", 0);
  std::string m2 = stateLike(model, pg.param, "moment2", 0);
  // beta^t starts at beta (t = 1 on the first step) and advances after each update; lazily, per
  // row, for a selected-rows gradient.
  std::string b1, b2;
  if (isSparseGrad(model, pg)) {
    b1 = statePerRow(model, pg.param, "beta1_pow_acc", beta1_);
    b2 = statePerRow(model, pg.param, "beta2_pow_acc", beta2_);
  } else {
    b1 = model.createPersistable(accumulatorName(pg.param, "beta1_pow_acc"), {1}, beta1_);
    b2 = model.createPersistable(accumulatorName(pg.param, "beta2_pow_acc"), {1}, beta2_);
  }
  return makeOp("adam",
                {{"Param", {pg.param}},
                 {"Grad", {pg.grad}},
                 {"LearningRate", {lr.str()}},
                 {"Moment1", {m1}},
                 {"Moment2", {m2}},
                 {"Beta1Pow", {b1}},
                 {"Beta2Pow", {b2}}},
                {{"ParamOut", {pg.param}},
                 {"Moment1Out", {m1}},
                 {"Moment2Out", {m2}},
                 {"Beta1PowOut", {b1}},
                 {"Beta2PowOut", {b2}}},
                {{"beta1", beta1_}, {"beta2", beta2_}, {"epsilon", epsilon_}});
}

proto::Op AdamW::makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) {
  proto::Op op = Adam::makeUpdate(model, pg, lr);
  op.set_type("adamw");
  return op;
}

proto::Op Adagrad::makeUpdate(ModelBuilder &model, const ParamGrad &pg, llvm::StringRef lr) {
  std::string m = rowWise_ ? statePerRow(model, pg.param, "moment", initialAccumulator_)
                           : stateLike(model, pg.param, "moment", initialAccumulator_);
  AttrList attrs{{"epsilon", epsilon_}};
  if (rowWise_) // left out otherwise, so element-wise programs read as before
    attrs.push_back({"row_wise", true});
  return makeOp(
      "adagrad",
      {{"Param", {pg.param}}, {"Grad", {pg.grad}}, {"Moment", {m}}, {"LearningRate", {lr.str()}}},
      {{"ParamOut", {pg.param}}, {"MomentOut", {m}}}, attrs);
}

} // namespace oar
