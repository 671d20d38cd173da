// The op schema registry, attr access, and the shape-inference and gradient contexts.
#include "ops/op_registry.h"

#include <map>
#include <memory>

#include "ir/names.h"

namespace oar::ops {

std::string typeString(const VarType &t) {
  return dtypeName(t.dtype).str() + dimsString(t.dims) + (t.isRows() ? " selected_rows" : "");
}

VarType varTypeOf(const proto::Var &v) {
  VarType t;
  t.dtype = v.type().dtype();
  t.dims.assign(v.type().dims().begin(), v.type().dims().end());
  // KIND_UNSET is refused by the verifier; read it as dense meanwhile.
  t.kind = v.kind() == proto::KIND_UNSET ? proto::DENSE_TENSOR : v.kind();
  return t;
}

namespace {
std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> &registry() {
  static std::map<std::string, std::unique_ptr<OpSchema>, std::less<>> r;
  return r;
}
} // namespace

OpSchema &registerOp(llvm::StringRef type) {
  auto &slot = registry()[type.str()];
  assert(!slot && "op registered twice");
  slot = std::make_unique<OpSchema>(type.str());
  return *slot;
}

const OpSchema *lookupOp(llvm::StringRef type) {
  auto it = registry().find(type);
  return it == registry().end() ? nullptr : it->second.get();
}

std::vector<const OpSchema *> allOps() {
  std::vector<const OpSchema *> out;
  for (auto &[name, schema] : registry())
    out.push_back(schema.get());
  return out;
}

const AttrDecl *OpSchema::findAttr(llvm::StringRef name) const {
  for (const AttrDecl &a : attrs_)
    if (a.name == name)
      return &a;
  return nullptr;
}

const proto::Attr &AttrReader::get(llvm::StringRef name) const {
  if (const proto::Attr *a = oar::findAttr(op_, name))
    return *a;
  const AttrDecl *decl = schema_.findAttr(name);
  assert(decl && "attr not declared in the op's schema");
  return decl->defaultValue;
}
int64_t AttrReader::getInt(llvm::StringRef name) const { return get(name).i(); }
float AttrReader::getFloat(llvm::StringRef name) const { return get(name).f(); }
bool AttrReader::getBool(llvm::StringRef name) const { return get(name).b(); }
std::string AttrReader::getString(llvm::StringRef name) const { return get(name).s(); }
std::vector<int64_t> AttrReader::getInts(llvm::StringRef name) const {
  const auto &v = get(name).ints().v();
  return {v.begin(), v.end()};
}
std::vector<float> AttrReader::getFloats(llvm::StringRef name) const {
  const auto &v = get(name).floats().v();
  return {v.begin(), v.end()};
}
std::vector<std::string> AttrReader::getStrings(llvm::StringRef name) const {
  const auto &v = get(name).strings().v();
  return {v.begin(), v.end()};
}

InferContext::InferContext(const proto::Op &op, const OpSchema &schema,
                           std::function<const VarType *(llvm::StringRef)> lookup)
    : op_(op), attrs_(op, schema), lookup_(std::move(lookup)) {}

/// The names of a slot (none when it is absent), without copying them: shape inference runs
/// before every op of every step.
static const google::protobuf::RepeatedPtrField<std::string> &namesOf(const proto::Slot *slot) {
  static const google::protobuf::RepeatedPtrField<std::string> kNone;
  return slot ? slot->names() : kNone;
}

bool InferContext::hasInput(llvm::StringRef slot) const {
  return slotName(findInputSlot(op_, slot)) != nullptr;
}
size_t InferContext::inputCount(llvm::StringRef slot) const {
  return namesOf(findInputSlot(op_, slot)).size();
}

const VarType &InferContext::input(llvm::StringRef slot, size_t i) const {
  const auto &names = namesOf(findInputSlot(op_, slot));
  assert(i < static_cast<size_t>(names.size()) && "input slot index out of range");
  const VarType *t = lookup_(names[static_cast<int>(i)]);
  assert(t && "input type must be resolved before shape inference");
  return *t;
}

bool InferContext::hasOutput(llvm::StringRef slot, size_t i) const {
  return slotName(findOutputSlot(op_, slot), i) != nullptr;
}
size_t InferContext::outputCount(llvm::StringRef slot) const {
  return namesOf(findOutputSlot(op_, slot)).size();
}

void InferContext::setOutput(llvm::StringRef slot, VarType type, size_t i) {
  const std::string *name = slotName(findOutputSlot(op_, slot), i);
  if (!name)
    return; // nobody wants this output
  results_.emplace_back(*name, std::move(type));
}

std::string InferContext::describe(llvm::StringRef slot, size_t i) const {
  auto names = opInputs(op_, slot);
  std::string var = i < names.size() ? names[i] : "?";
  return llvm::formatv("{0} ({1}) is {2}", slot, var, typeString(input(slot, i))).str();
}

GradBuilder::GradBuilder(const proto::Op &fwd, const OpSchema &schema,
                         std::function<bool(llvm::StringRef)> needsGrad)
    : fwd_(fwd), attrs_(fwd, schema), needsGrad_(std::move(needsGrad)) {}

std::vector<std::string> GradBuilder::outputGrad(llvm::StringRef slot) const {
  std::vector<std::string> out;
  for (const auto &n : output(slot))
    out.push_back(gradName(n));
  return out;
}

std::vector<std::string> GradBuilder::inputGrad(llvm::StringRef slot) const {
  std::vector<std::string> out;
  for (const auto &n : input(slot))
    out.push_back(needsGrad_(n) ? gradName(n) : kEmptyVarName.str());
  return out;
}

bool GradBuilder::needsInputGrad(llvm::StringRef slot) const {
  for (const auto &n : input(slot))
    if (needsGrad_(n))
      return true;
  return false;
}

void GradBuilder::addPlainOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                             const AttrList &attrs) {
  ops_.push_back(makeOp(type, inputs, outputs, attrs, proto::BACKWARD));
}

void GradBuilder::addOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                        const AttrList &attrs) {
  proto::Op op = makeOp(type, inputs, outputs, attrs, proto::BACKWARD);
  for (const proto::Attr &a : fwd_.attrs())
    if (!oar::findAttr(op, a.name()))
      setAttr(op, a.name(), AttrValue(a));
  ops_.push_back(std::move(op));
}

} // namespace oar::ops
