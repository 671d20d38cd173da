// Autodiff over block 0 through each op's gradient maker.
#include "api/backward.h"

#include "ir/names.h"
#include "ops/op_registry.h"
#include "support/error.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

namespace {

bool isFloat(const proto::Var *v) {
  return v && (v->type().dtype() == proto::F32 || v->type().dtype() == proto::F64);
}

/// Vars whose gradient is wanted: trainable params, and float outputs of ops fed by such vars.
llvm::StringSet<> varsRequiringGrad(const proto::Block &block,
                                    const std::set<std::string> &noGradSet) {
  llvm::StringSet<> wanted;
  auto blocked = [&](const proto::Var *v) {
    return !v || v->stop_gradient() || noGradSet.count(v->name()) || !isFloat(v);
  };
  for (const proto::Var &v : block.vars())
    if (v.is_parameter() && v.trainable() && !blocked(&v))
      wanted.insert(v.name());
  for (const proto::Op &op : block.ops()) {
    const ops::OpSchema *schema = ops::lookupOp(op.type());
    if (!schema || !schema->gradMaker())
      continue;
    bool fed =
        llvm::any_of(allInputNames(op), [&](const std::string &n) { return wanted.count(n); });
    if (fed)
      for (const std::string &out : allOutputNames(op))
        if (!blocked(findVar(block, out)))
          wanted.insert(out);
  }
  return wanted;
}

/// Gives the vars `op` writes the kind its shape inference makes them: selected rows for a sparse
/// lookup_table's W@GRAD and for sums of those, dense otherwise. An op whose inference fails
/// keeps dense outputs; the verifier reports the failure with its context.
void setOutputKinds(proto::Block &block, const proto::Op &op) {
  const ops::OpSchema *schema = ops::lookupOp(op.type());
  if (!schema || !schema->infer())
    return;
  llvm::StringMap<ops::VarType> types;
  for (const std::string &n : allInputNames(op)) {
    if (n == kEmptyVarName)
      continue;
    const proto::Var *v = findVar(block, n);
    if (!v)
      return;
    types[n] = ops::varTypeOf(*v);
  }
  ops::InferContext ctx(op, *schema, [&](llvm::StringRef name) -> const ops::VarType * {
    auto it = types.find(name);
    return it == types.end() ? nullptr : &it->second;
  });
  if (llvm::Error err = schema->infer()(ctx)) {
    llvm::consumeError(std::move(err));
    return;
  }
  for (const auto &[name, type] : ctx.results())
    if (proto::Var *v = findVar(block, name))
      v->set_kind(type.kind);
}

} // namespace

llvm::Expected<std::vector<ParamGrad>> appendBackward(proto::Program &prog, llvm::StringRef loss,
                                                      const std::set<std::string> &noGradSet) {
  proto::Block &block = *prog.mutable_blocks(0);
  const proto::Var *lossVar = findVar(block, loss);
  if (!lossVar)
    return makeError("append_backward: loss var {0} is not declared in block 0", loss);
  if (numElements(dimsOf(lossVar->type())) != 1 || llvm::is_contained(lossVar->type().dims(), -1))
    return makeError("append_backward: loss {0} is {1}; it must hold one element (take its mean)",
                     loss, typeString(lossVar->type()));
  llvm::StringSet<> wanted = varsRequiringGrad(block, noGradSet);
  if (prog.loss().empty()) // the first loss differentiated is the one the trainer reports
    prog.set_loss(loss.str());

  // The forward ops that lie between a var requiring grad and the loss, in program order.
  std::vector<proto::Op> forward(block.ops().begin(), block.ops().end());
  llvm::StringSet<> needed;
  needed.insert(loss);
  std::vector<size_t> relevant;
  for (size_t i = forward.size(); i-- > 0;) {
    const proto::Op &op = forward[i];
    bool feedsLoss =
        llvm::any_of(allOutputNames(op), [&](const std::string &n) { return needed.count(n); });
    bool fromParam =
        llvm::any_of(allInputNames(op), [&](const std::string &n) { return wanted.count(n); });
    if (!feedsLoss || !fromParam)
      continue;
    const ops::OpSchema *schema = ops::lookupOp(op.type());
    if (!schema || !schema->gradMaker())
      return makeError("append_backward: op #{0} ({1}) lies between a parameter and the loss but "
                       "has no gradient{2}",
                       i, op.type(),
                       schema ? " (" + schema->noGradReason() + ")" : std::string(" (unknown op)"));
    relevant.push_back(i);
    for (const std::string &n : allInputNames(op))
      needed.insert(n);
  }

  // How many grad contributions each var gets, so several are summed.
  llvm::StringMap<unsigned> expected, emitted;
  llvm::StringMap<std::vector<std::string>> pieces;
  for (size_t i : relevant)
    for (const std::string &n : allInputNames(forward[i]))
      if (wanted.count(n))
        ++expected[n];

  auto declareGrad = [&](const std::string &gradVar, const std::string &of) {
    const proto::Var *src = findVar(block, of);
    proto::Var &v = declareVar(block, gradVar, src->type().dtype(), dimsOf(src->type()));
    (void)v;
  };
  llvm::StringSet<> produced;
  auto append = [&](proto::Op op) { *block.add_ops() = std::move(op); };

  std::string lossGrad = gradName(loss);
  declareGrad(lossGrad, loss.str());
  append(makeOp("fill_constant", {}, {{"Out", {lossGrad}}},
                {{"shape", std::vector<int64_t>{1}},
                 {"dtype", static_cast<int64_t>(lossVar->type().dtype())},
                 {"value", 1.0f}},
                proto::LOSS));
  produced.insert(lossGrad);

  for (size_t i : relevant) {
    const proto::Op &fwd = forward[i];
    const ops::OpSchema *schema = ops::lookupOp(fwd.type());
    ops::GradBuilder builder(fwd, *schema, [&](llvm::StringRef n) { return wanted.count(n) > 0; });
    schema->gradMaker()(builder);
    std::vector<proto::Op> gradOps = builder.takeOps();
    // An output nobody used has no gradient yet: give it zeros.
    for (const std::string &out : allOutputNames(fwd)) {
      std::string g = gradName(out);
      bool read = llvm::any_of(
          gradOps, [&](const proto::Op &op) { return llvm::is_contained(allInputNames(op), g); });
      if (read && !produced.count(g) && findVar(block, out)) {
        declareGrad(g, out);
        append(makeOp("fill_zeros_like", {{"X", {out}}}, {{"Out", {g}}}, {}, proto::BACKWARD));
        produced.insert(g);
      }
    }
    for (proto::Op &op : gradOps) {
      std::vector<std::string> finished;
      for (proto::Slot &slot : *op.mutable_outputs())
        for (std::string &name : *slot.mutable_names()) {
          auto of = gradOf(name);
          if (name == kEmptyVarName || !of)
            continue;
          if (expected.lookup(*of) > 1) { // one of several contributions: rename, sum later
            name = renamedGrad(name, emitted[*of]);
            pieces[*of].push_back(name);
          }
          declareGrad(name, *of);
          if (++emitted[*of] >= expected.lookup(*of))
            finished.push_back(*of);
        }
      setOutputKinds(block, op);
      append(std::move(op));
      for (const std::string &var : finished) {
        std::string g = gradName(var);
        if (expected.lookup(var) > 1) {
          declareGrad(g, var);
          proto::Op sum = makeOp("sum", {{"X", pieces[var]}}, {{"Out", {g}}}, {}, proto::BACKWARD);
          setOutputKinds(block, sum);
          append(std::move(sum));
        }
        produced.insert(g);
      }
    }
  }

  std::vector<ParamGrad> result;
  for (const proto::Var &v : block.vars())
    if (v.is_parameter() && produced.count(gradName(v.name())))
      result.push_back({v.name(), gradName(v.name())});
  llvm::sort(result, [](const ParamGrad &a, const ParamGrad &b) { return a.param < b.param; });
  return result;
}

} // namespace oar
