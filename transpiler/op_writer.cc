// Building ops in place.
#include "transpiler/op_writer.h"

#include <cassert>

namespace oar {

namespace {
OpWriter::Names &addSlot(google::protobuf::RepeatedPtrField<proto::Slot> &slots,
                         llvm::StringRef slot) {
  proto::Slot &s = *slots.Add();
  s.set_slot(slot.str());
  return *s.mutable_names();
}
} // namespace

OpWriter::OpWriter(proto::Block &block, llvm::StringRef type, OpRole role) : op_(*block.add_ops()) {
  op_.set_type(type.str());
  op_.set_role(role);
}

OpWriter::Names &OpWriter::inputs(llvm::StringRef slot) {
  return addSlot(*op_.mutable_inputs(), slot);
}

OpWriter::Names &OpWriter::outputs(llvm::StringRef slot) {
  return addSlot(*op_.mutable_outputs(), slot);
}

OpWriter &OpWriter::input(llvm::StringRef slot, llvm::StringRef name) {
  inputs(slot).Add(name.str());
  return *this;
}

OpWriter &OpWriter::output(llvm::StringRef slot, llvm::StringRef name) {
  outputs(slot).Add(name.str());
  return *this;
}

proto::Attr &OpWriter::addAttr(llvm::StringRef name) {
  assert((op_.attrs().empty() || op_.attrs(op_.attrs_size() - 1).name() < name) &&
         "add attrs in name order, the order makeOp stores them in");
  proto::Attr &a = *op_.add_attrs();
  a.set_name(name.str());
  return a;
}

OpWriter &OpWriter::attr(llvm::StringRef name, int64_t value) {
  addAttr(name).set_i(value);
  return *this;
}

OpWriter &OpWriter::attr(llvm::StringRef name, float value) {
  addAttr(name).set_f(value);
  return *this;
}

OpWriter &OpWriter::attr(llvm::StringRef name, llvm::StringRef value) {
  addAttr(name).set_s(value.str());
  return *this;
}

OpWriter &OpWriter::attr(llvm::StringRef name, llvm::ArrayRef<int64_t> values) {
  addAttr(name).mutable_ints()->mutable_v()->Add(values.begin(), values.end());
  return *this;
}

OpWriter &OpWriter::attr(llvm::StringRef name, llvm::ArrayRef<std::string> values) {
  addAttr(name).mutable_strings()->mutable_v()->Add(values.begin(), values.end());
  return *this;
}

google::protobuf::RepeatedField<int64_t> &OpWriter::ints(llvm::StringRef name) {
  return *addAttr(name).mutable_ints()->mutable_v();
}

OpWriter::Names &OpWriter::strings(llvm::StringRef name) {
  return *addAttr(name).mutable_strings()->mutable_v();
}

} // namespace oar
