// The Program IR: thin helpers over the protobuf messages in program.proto.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/program.pb.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace oar {

using proto::DType;
using proto::OpRole;

/// The format version written into every program; loading a newer one is an error.
inline constexpr int kFormatVersion = 1;

/// A var type's dims as an ArrayRef (valid while the message lives).
inline llvm::ArrayRef<int64_t> dimsOf(const proto::TensorType &type) {
  return {type.dims().data(), static_cast<size_t>(type.dims_size())};
}

/// Bytes per element; 0 for DTYPE_UNSET.
size_t dtypeSize(DType dtype);
/// "f32", "i64", ...
llvm::StringRef dtypeName(DType dtype);
/// Product of dims (a -1 counts as 1); 1 for a scalar.
int64_t numElements(llvm::ArrayRef<int64_t> dims);
/// "f32[-1,13]".
std::string typeString(const proto::TensorType &type);
std::string dimsString(llvm::ArrayRef<int64_t> dims);

/// Reads a program: `.pbtxt` as protobuf text, anything else as binary protobuf.
/// Errors name the file (and line:column for text).
llvm::Expected<proto::Program> loadProgram(llvm::StringRef path);
/// Parses protobuf text; `sourceName` prefixes error positions.
llvm::Expected<proto::Program> parseProgramText(llvm::StringRef text, llvm::StringRef sourceName);
/// Writes binary (`.pb`) or text (`.pbtxt`, opened by a `# origin` line) by extension.
llvm::Error saveProgram(const proto::Program &prog, llvm::StringRef path, llvm::StringRef origin);
/// Appends `prog` serialized deterministically to `out`: the same program gives the same bytes
/// (files written twice compare equal; digests over a program are stable). False, with nothing
/// appended, for a program over protobuf's 2 GiB limit.
[[nodiscard]] bool appendProgramBytes(const proto::Program &prog, std::string &out);
/// Protobuf text of `prog` with short repeated numbers.
std::string programText(const proto::Program &prog);

/// A typed attribute value, convertible from the C++ types attrs hold.
struct AttrValue {
  proto::Attr attr;
  AttrValue(int v) { attr.set_i(v); }
  AttrValue(int64_t v) { attr.set_i(v); }
  AttrValue(float v) { attr.set_f(v); }
  AttrValue(double v) { attr.set_f(static_cast<float>(v)); }
  AttrValue(bool v) { attr.set_b(v); }
  AttrValue(const char *v) { attr.set_s(v); }
  AttrValue(std::string v) { attr.set_s(std::move(v)); }
  AttrValue(std::vector<int64_t> v);
  AttrValue(std::vector<float> v);
  AttrValue(std::vector<std::string> v);
  AttrValue(const proto::Attr &a) : attr(a) {}
  static AttrValue block(int idx) {
    proto::Attr a;
    a.set_block(idx);
    return AttrValue(a);
  }
};

using SlotMap = std::vector<std::pair<std::string, std::vector<std::string>>>;
using AttrList = std::vector<std::pair<std::string, AttrValue>>;

/// Builds an op message; attrs are stored sorted by name so output is deterministic.
proto::Op makeOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                 const AttrList &attrs = {}, OpRole role = proto::FORWARD);

/// An op's input/output slot by name; nullptr when absent. No copy: for hot paths.
const proto::Slot *findInputSlot(const proto::Op &op, llvm::StringRef slot);
const proto::Slot *findOutputSlot(const proto::Op &op, llvm::StringRef slot);
/// Name `i` of `slot`; nullptr when the slot is absent, has no name `i`, or holds the empty-var
/// name there. No copy.
const std::string *slotName(const proto::Slot *slot, size_t i = 0);
/// The names in an op's input/output slot (empty when the slot is absent).
std::vector<std::string> opInputs(const proto::Op &op, llvm::StringRef slot);
std::vector<std::string> opOutputs(const proto::Op &op, llvm::StringRef slot);
/// Every var name an op reads or writes, in slot order.
std::vector<std::string> allInputNames(const proto::Op &op);
std::vector<std::string> allOutputNames(const proto::Op &op);
const proto::Attr *findAttr(const proto::Op &op, llvm::StringRef name);
void setAttr(proto::Op &op, llvm::StringRef name, const AttrValue &value);

const proto::Var *findVar(const proto::Block &block, llvm::StringRef name);
proto::Var *findVar(proto::Block &block, llvm::StringRef name);
/// Adds (or replaces) a dense var in `block`; returns it.
proto::Var &declareVar(proto::Block &block, llvm::StringRef name, DType dtype,
                       llvm::ArrayRef<int64_t> dims);

/// Name -> var lookups over one block in O(1), kept in step with declare(). Var pointers stay
/// valid while vars are only added (protobuf keeps repeated elements in place).
class VarTable {
public:
  explicit VarTable(proto::Block &block);
  proto::Var *find(llvm::StringRef name) const { return index_.lookup(name); }
  /// Makes room for `more` new vars, so that a builder that knows how many it adds does not
  /// regrow the table (which hashes every name again) or the block's var list.
  void reserve(size_t more);
  /// Adds (or retypes) a dense var, like declareVar().
  proto::Var &declare(llvm::StringRef name, DType dtype, llvm::ArrayRef<int64_t> dims);

private:
  proto::Block &block_;
  /// Keys view each var's own name, so a declare costs no copy of the name (the transpiler
  /// declares tens of thousands of vars); a var must not be renamed while the table lives.
  llvm::DenseMap<llvm::StringRef, proto::Var *> index_;
};

/// A new empty program with its root block.
proto::Program newProgram();

} // namespace oar
