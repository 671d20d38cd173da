// Op schemas: each op declares its slots, attrs, shape inference and gradient maker once.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/program.h"
#include "support/error.h"
#include "llvm/ADT/SmallVector.h"

namespace oar::ops {

/// A var's static type: kind, dtype and dims (-1 for an unknown batch size). A SELECTED_ROWS
/// var's dims are those of the dense tensor it stands for, [height, width].
struct VarType {
  DType dtype = proto::DTYPE_UNSET;
  llvm::SmallVector<int64_t, 4> dims;
  proto::VarKind kind = proto::DENSE_TENSOR;
  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool isRows() const { return kind == proto::SELECTED_ROWS; }
  bool operator==(const VarType &o) const {
    return dtype == o.dtype && dims == o.dims && kind == o.kind;
  }
};
/// "f32[2,3]", or "f32[100,8] selected_rows".
std::string typeString(const VarType &t);
/// A declared var's type.
VarType varTypeOf(const proto::Var &v);

/// kSelectedRows: the slot also takes SelectedRows vars (every other slot takes dense only).
enum SlotFlags : unsigned { kRequired = 0, kOptional = 1, kDuplicable = 2, kSelectedRows = 4 };

struct SlotDecl {
  std::string name, doc;
  unsigned flags = kRequired;
};
struct AttrDecl {
  std::string name, doc;
  proto::Attr defaultValue; // its oneof case is the attr's type
};

class OpSchema;
class InferContext;
class GradBuilder;
using InferFn = llvm::Error (*)(InferContext &);
using GradFn = void (*)(GradBuilder &);

/// Reads an op's attrs, falling back to the schema's defaults.
class AttrReader {
public:
  AttrReader(const proto::Op &op, const OpSchema &schema) : op_(op), schema_(schema) {}
  int64_t getInt(llvm::StringRef name) const;
  float getFloat(llvm::StringRef name) const;
  bool getBool(llvm::StringRef name) const;
  std::string getString(llvm::StringRef name) const;
  std::vector<int64_t> getInts(llvm::StringRef name) const;
  std::vector<float> getFloats(llvm::StringRef name) const;
  std::vector<std::string> getStrings(llvm::StringRef name) const;
  /// The attr as set on the op, or its default.
  const proto::Attr &get(llvm::StringRef name) const;

private:
  const proto::Op &op_;
  const OpSchema &schema_;
};

/// The declaration of one op type. Built with chained calls in OAR_OP.
class OpSchema {
public:
  explicit OpSchema(std::string type) : type_(std::move(type)) {}
  OpSchema &summary(std::string s) {
    summary_ = std::move(s);
    return *this;
  }
  OpSchema &input(std::string name, std::string doc, unsigned flags = kRequired) {
    inputs_.push_back({std::move(name), std::move(doc), flags});
    return *this;
  }
  OpSchema &output(std::string name, std::string doc, unsigned flags = kRequired) {
    outputs_.push_back({std::move(name), std::move(doc), flags});
    return *this;
  }
  template <typename T> OpSchema &attr(std::string name, T defaultValue, std::string doc) {
    AttrValue v(defaultValue);
    v.attr.set_name(name);
    attrs_.push_back({std::move(name), std::move(doc), v.attr});
    return *this;
  }
  /// Declares the same attrs as `other` (a grad op takes its forward op's attrs).
  OpSchema &sameAttrsAs(const OpSchema &other) {
    for (const AttrDecl &a : other.attrs_)
      if (!findAttr(a.name))
        attrs_.push_back(a);
    return *this;
  }
  /// Applies a declaration shared by several ops (the optimizers' schedule attrs).
  OpSchema &with(void (*declare)(OpSchema &)) {
    declare(*this);
    return *this;
  }
  OpSchema &inferShape(InferFn fn) {
    infer_ = fn;
    return *this;
  }
  OpSchema &grad(GradFn fn) {
    grad_ = fn;
    return *this;
  }
  /// Declares that the op has no gradient, and why.
  OpSchema &noGrad(std::string reason) {
    noGradReason_ = std::move(reason);
    return *this;
  }

  const std::string &type() const { return type_; }
  const std::string &summaryText() const { return summary_; }
  const std::vector<SlotDecl> &inputs() const { return inputs_; }
  const std::vector<SlotDecl> &outputs() const { return outputs_; }
  const std::vector<AttrDecl> &attrs() const { return attrs_; }
  const AttrDecl *findAttr(llvm::StringRef name) const;
  InferFn infer() const { return infer_; }
  GradFn gradMaker() const { return grad_; }
  const std::string &noGradReason() const { return noGradReason_; }

private:
  std::string type_, summary_, noGradReason_;
  std::vector<SlotDecl> inputs_, outputs_;
  std::vector<AttrDecl> attrs_;
  InferFn infer_ = nullptr;
  GradFn grad_ = nullptr;
};

/// Registers a schema at static-initialisation time; the returned reference is stable.
OpSchema &registerOp(llvm::StringRef type);
/// nullptr when no op of that type is registered.
const OpSchema *lookupOp(llvm::StringRef type);
/// Every registered schema, sorted by type.
std::vector<const OpSchema *> allOps();

/// What shape inference sees: input types by slot, and where to put output types.
/// Used both statically (dims may be -1) and at run time (concrete dims).
class InferContext {
public:
  InferContext(const proto::Op &op, const OpSchema &schema,
               std::function<const VarType *(llvm::StringRef)> lookup);
  const proto::Op &op() const { return op_; }
  const AttrReader &attrs() const { return attrs_; }
  bool hasInput(llvm::StringRef slot) const;
  size_t inputCount(llvm::StringRef slot) const;
  /// The type of the i-th var in an input slot (its presence was checked by the verifier).
  const VarType &input(llvm::StringRef slot, size_t i = 0) const;
  bool hasOutput(llvm::StringRef slot, size_t i = 0) const;
  size_t outputCount(llvm::StringRef slot) const;
  void setOutput(llvm::StringRef slot, VarType type, size_t i = 0);
  /// The types set so far, by output var name.
  const std::vector<std::pair<std::string, VarType>> &results() const { return results_; }
  /// Names the op and its slot in an error: "X is f32[2,3] but Y is f32[4,5]; ...".
  std::string describe(llvm::StringRef slot, size_t i = 0) const;

private:
  const proto::Op &op_;
  AttrReader attrs_;
  std::function<const VarType *(llvm::StringRef)> lookup_;
  std::vector<std::pair<std::string, VarType>> results_;
};

/// Two dims agree when equal or when either is unknown (-1).
inline bool dimsAgree(int64_t a, int64_t b) { return a == b || a < 0 || b < 0; }

/// Builds a forward op's gradient ops. Grads of inputs that nobody needs are named
/// kEmptyVarName so kernels can skip them.
class GradBuilder {
public:
  GradBuilder(const proto::Op &fwd, const OpSchema &schema,
              std::function<bool(llvm::StringRef)> needsGrad);
  std::vector<std::string> input(llvm::StringRef slot) const { return opInputs(fwd_, slot); }
  std::vector<std::string> output(llvm::StringRef slot) const { return opOutputs(fwd_, slot); }
  std::vector<std::string> outputGrad(llvm::StringRef slot) const;
  std::vector<std::string> inputGrad(llvm::StringRef slot) const;
  bool needsInputGrad(llvm::StringRef slot) const;
  const proto::Attr &attr(llvm::StringRef name) const { return attrs_.get(name); }
  const AttrReader &attrs() const { return attrs_; }
  /// Appends a grad op (role BACKWARD), copying every attr of the forward op not given here.
  void addOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
             const AttrList &attrs = {});
  /// Appends a grad op with only the given attrs.
  void addPlainOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                  const AttrList &attrs = {});
  std::vector<proto::Op> takeOps() { return std::move(ops_); }

private:
  const proto::Op &fwd_;
  AttrReader attrs_;
  std::function<bool(llvm::StringRef)> needsGrad_;
  std::vector<proto::Op> ops_;
};

} // namespace oar::ops

#define OAR_OP_CONCAT2(a, b) a##b
#define OAR_OP_CONCAT(a, b) OAR_OP_CONCAT2(a, b)
/// Declares an op: `OAR_OP(scale).summary(...).input(...)...;`
#define OAR_OP(type)                                                                               \
  [[maybe_unused]] static ::oar::ops::OpSchema &OAR_OP_CONCAT(oarOpSchema_, type) =                \
      ::oar::ops::registerOp(#type)
