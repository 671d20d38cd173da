// Fusing mul, elementwise_add and relu into fc.
#include "serving/fuse_fc.h"

#include "ops/op_registry.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

namespace {

/// Who reads and who writes each var of a block, and which vars must stay visible.
struct Uses {
  llvm::StringMap<int> readers;
  llvm::StringSet<> written, visible;

  Uses(const proto::Program &program) {
    for (const proto::Op &op : program.blocks(0).ops()) {
      for (const std::string &in : allInputNames(op))
        ++readers[in];
      for (const std::string &out : allOutputNames(op))
        written.insert(out);
    }
    for (const std::string &p : program.predictions())
      visible.insert(p);
  }
  /// `var` feeds only the next op of its layer and is not returned.
  bool internal(const std::string &var) const {
    auto it = readers.find(var);
    return it != readers.end() && it->second == 1 && !visible.contains(var);
  }
};

/// `name` of `op` as set, or its schema's default.
int64_t intAttr(const proto::Op &op, llvm::StringRef name) {
  return ops::AttrReader(op, *ops::lookupOp(op.type())).getInt(name);
}

/// The single input (or output) of `slot`, or "" when it has none or several.
std::string only(const std::vector<std::string> &names) {
  return names.size() == 1 ? names[0] : std::string();
}

/// The rank a block declares for `var`, or -1.
int rankOf(const proto::Block &block, const std::string &var) {
  const proto::Var *v = findVar(block, var);
  return v && v->has_type() ? v->type().dims_size() : -1;
}

} // namespace

int fuseFullyConnected(proto::Program &program) {
  if (program.blocks_size() != 1) // sub-blocks could read the vars a fusion removes
    return 0;
  proto::Block &block = *program.mutable_blocks(0);
  Uses uses(program);
  auto isParam = [&](const std::string &var, int rank) {
    return !var.empty() && !uses.written.contains(var) && rankOf(block, var) == rank;
  };
  std::vector<proto::Op> ops;
  int fused = 0;
  for (int i = 0; i < block.ops_size(); ++i) {
    const proto::Op &mul = block.ops(i);
    std::string x = only(opInputs(mul, "X")), w = only(opInputs(mul, "Y"));
    std::string product = only(opOutputs(mul, "Out"));
    bool layer = mul.type() == "mul" && i + 1 < block.ops_size() && !x.empty() && isParam(w, 2) &&
                 intAttr(mul, "y_num_col_dims") == 1 && uses.internal(product);
    int64_t xn = layer ? intAttr(mul, "x_num_col_dims") : 0;
    const proto::Op *add = layer ? &block.ops(i + 1) : nullptr;
    std::string bias, sum;
    if (add) {
      bias = only(opInputs(*add, "Y"));
      sum = only(opOutputs(*add, "Out"));
      layer = add->type() == "elementwise_add" && only(opInputs(*add, "X")) == product &&
              isParam(bias, 1) && !sum.empty();
      int64_t axis = layer ? intAttr(*add, "axis") : 0;
      layer = layer && (axis == -1 || axis == xn);
    }
    if (!layer) {
      ops.push_back(mul);
      continue;
    }
    std::string out = sum, activation;
    int consumed = 2;
    if (i + 2 < block.ops_size()) {
      const proto::Op &relu = block.ops(i + 2);
      if (relu.type() == "relu" && only(opInputs(relu, "X")) == sum && uses.internal(sum) &&
          !only(opOutputs(relu, "Out")).empty()) {
        out = only(opOutputs(relu, "Out"));
        activation = "relu";
        consumed = 3;
      }
    }
    if (out == x || out == w || out == bias) { // written in place: the fused op would read
      ops.push_back(mul);                      // its own output
      continue;
    }
    ops.push_back(makeOp("fc", {{"Input", {x}}, {"W", {w}}, {"Bias", {bias}}}, {{"Out", {out}}},
                         {{"in_num_col_dims", xn}, {"activation", activation}}, mul.role()));
    ++fused;
    i += consumed - 1;
  }
  block.clear_ops();
  for (proto::Op &op : ops)
    *block.add_ops() = std::move(op);
  return fused;
}

} // namespace oar
