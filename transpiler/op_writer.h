// OpWriter: builds an op in place at the end of a block, for the transpiler's per-block ops.
#pragma once

#include "ir/program.h"

namespace oar {

/// Writes one op straight into a block: the same message makeOp() gives, without its temporary
/// slot maps and attr values. The transpiler adds several ops per param block, and makeOp's
/// copies of each name and attr were a large share of transpile time. Slots keep the order they
/// are added in; attrs must be added in name order, the order makeOp stores them in. The op is
/// complete as it is written: a writer holds only a reference to it.
class OpWriter {
public:
  using Names = google::protobuf::RepeatedPtrField<std::string>;

  /// Appends an op of `type` and `role` to `block`.
  OpWriter(proto::Block &block, llvm::StringRef type, OpRole role);
  /// A new input (output) slot whose names the caller adds (Add() moves a std::string in).
  Names &inputs(llvm::StringRef slot);
  Names &outputs(llvm::StringRef slot);
  /// A new input (output) slot holding one name.
  OpWriter &input(llvm::StringRef slot, llvm::StringRef name);
  OpWriter &output(llvm::StringRef slot, llvm::StringRef name);
  OpWriter &attr(llvm::StringRef name, int64_t value);
  OpWriter &attr(llvm::StringRef name, float value);
  OpWriter &attr(llvm::StringRef name, llvm::StringRef value);
  OpWriter &attr(llvm::StringRef name, llvm::ArrayRef<int64_t> values);
  OpWriter &attr(llvm::StringRef name, llvm::ArrayRef<std::string> values);
  /// A new int (string) list attr whose values the caller adds, so that a list made from the
  /// plan needs no temporary vector.
  google::protobuf::RepeatedField<int64_t> &ints(llvm::StringRef name);
  Names &strings(llvm::StringRef name);
  proto::Op &op() { return op_; }

private:
  proto::Attr &addAttr(llvm::StringRef name);
  proto::Op &op_;
};

} // namespace oar
