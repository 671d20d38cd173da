// Gradient checks: analytic gradients from append_backward against central differences.
#include "test/helpers/grad_check.h"

#include <random>

#include "api/backward.h"
#include "api/layers.h"
#include "executor/executor.h"
#include "executor/selected_rows.h"
#include "ir/names.h"
#include "ops/verify.h"
#include "test/helpers/expect.h"

using namespace oar;

Tensor randomTensor(std::vector<int64_t> dims, uint64_t seed, double lo, double hi) {
  Tensor t(proto::F64, dims);
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<double>()[i] = u(gen);
  return t;
}

static double lossValue(Executor &exec, const proto::Program &prog, Scope &scope,
                        const std::string &loss) {
  REQUIRE_OK(
      exec.run(prog, scope, 0, [](const proto::Op &op) { return op.role() == proto::FORWARD; }));
  return scope.find(loss)->data<double>()[0];
}

GradCheckProgram buildGradCheck(const GradCheck &c, Scope &scope) {
  ModelBuilder m;
  proto::Block &block = *m.main().mutable_blocks(0);
  SlotMap inputs;
  std::vector<std::pair<std::string, std::string>> checked; // (slot, var)
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const auto &[slot, value] = c.inputs[i];
    std::string name = slot + "_" + std::to_string(i);
    proto::Var &v = declareVar(block, name, value.dtype(), value.dims());
    bool check = llvm::is_contained(c.checkSlots, slot);
    v.set_is_parameter(check);
    v.set_trainable(check);
    v.set_stop_gradient(!check);
    scope.get(name) = value.clone();
    auto it = llvm::find_if(inputs, [&, &slot = slot](auto &p) { return p.first == slot; });
    if (it == inputs.end())
      inputs.push_back({slot, {name}});
    else
      it->second.push_back(name);
    if (check)
      checked.emplace_back(slot, name);
  }
  // Output slots repeat for multi-output slots; appendOp names them <op>.tmp_k.
  std::vector<std::string> outSlots;
  std::vector<bool> inLoss;
  for (auto [slot, n] : c.outputs)
    for (int k = 0; k < n; ++k)
      outSlots.push_back(slot), inLoss.push_back(true);
  for (auto [slot, n] : c.extraOutputs)
    for (int k = 0; k < n; ++k)
      outSlots.push_back(slot), inLoss.push_back(false);
  // appendOp takes one name per slot entry; build the op by hand for multi-output slots.
  SlotMap outputs;
  std::vector<std::string> outNames;
  for (size_t k = 0; k < outSlots.size(); ++k) {
    outNames.push_back("out_" + std::to_string(k));
    auto it = llvm::find_if(outputs, [&](auto &p) { return p.first == outSlots[k]; });
    if (it == outputs.end())
      outputs.push_back({outSlots[k], {outNames.back()}});
    else
      it->second.push_back(outNames.back());
  }
  proto::Op op = makeOp(c.op, inputs, outputs, c.attrs);
  // Run it once to learn the output types, then declare them.
  Executor exec;
  REQUIRE_OK(exec.runOp(op, scope, c.op));
  for (const std::string &n : outNames)
    declareVar(block, n, scope.find(n)->dtype(), scope.find(n)->dims());
  *block.add_ops() = op;
  std::vector<std::string> partial;
  for (size_t k = 0; k < outNames.size(); ++k) {
    if (!inLoss[k])
      continue;
    const Tensor &out = *scope.find(outNames[k]);
    std::string w = "w_" + std::to_string(k);
    declareVar(block, w, proto::F64, out.dims()).set_stop_gradient(true);
    scope.get(w) = randomTensor({out.dims().begin(), out.dims().end()}, 100 + k);
    auto prod =
        requireValue(m.appendOp("elementwise_mul", {{"X", {outNames[k]}}, {"Y", {w}}}, {"Out"}));
    auto s = requireValue(m.appendOp("reduce_sum", {{"X", prod}}, {"Out"}, {{"reduce_all", true}}));
    partial.push_back(s[0]);
  }
  std::string loss = requireValue(m.appendOp("sum", {{"X", partial}}, {"Out"}))[0];
  requireValue(appendBackward(m.main(), loss));
  REQUIRE_OK(verifyProgram(m.main(), c.op + " grad check"));
  return {m.main(), loss, checked};
}

void runGradCheck(const GradCheck &c) {
  Scope scope;
  GradCheckProgram g = buildGradCheck(c, scope);
  Executor exec;
  REQUIRE_OK(exec.run(g.program, scope));

  for (const auto &[slot, var] : g.checked) {
    // A selected-rows gradient (a sparse lookup_table's) is checked as the dense tensor it
    // stands for.
    const SelectedRows *rows = scope.findRows(gradName(var));
    Tensor analytic = rows ? toDense(*rows) : scope.find(gradName(var))->clone();
    Tensor &x = *scope.find(var);
    for (int64_t i = 0; i < x.numel(); ++i) {
      double saved = x.data<double>()[i];
      x.data<double>()[i] = saved + c.eps;
      double up = lossValue(exec, g.program, scope, g.loss);
      x.data<double>()[i] = saved - c.eps;
      double down = lossValue(exec, g.program, scope, g.loss);
      x.data<double>()[i] = saved;
      double numeric = (up - down) / (2 * c.eps), got = analytic.data<double>()[i];
      INFO(c.op << ": d loss / d " << slot << "[" << i << "]: autodiff " << got << ", numeric "
                << numeric);
      CHECK(std::abs(got - numeric) <= c.atol + c.rtol * std::abs(numeric) + 1e-7);
    }
  }
}
