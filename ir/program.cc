// Loading, saving and building Program messages.
#include "ir/program.h"

#include <fstream>
#include <sstream>

#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "ir/names.h"
#include "ir/write_file.h"
#include "support/error.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace oar {

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case proto::F32:
  case proto::I32:
    return 4;
  case proto::F64:
  case proto::I64:
    return 8;
  case proto::BF16:
    return 2;
  default:
    return 0;
  }
}

llvm::StringRef dtypeName(DType dtype) {
  switch (dtype) {
  case proto::F32:
    return "f32";
  case proto::F64:
    return "f64";
  case proto::I32:
    return "i32";
  case proto::I64:
    return "i64";
  case proto::BF16:
    return "bf16";
  default:
    return "unset";
  }
}

int64_t numElements(llvm::ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d < 0 ? 1 : d;
  return n;
}

std::string dimsString(llvm::ArrayRef<int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ',';
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::string typeString(const proto::TensorType &type) {
  std::vector<int64_t> dims(type.dims().begin(), type.dims().end());
  return dtypeName(type.dtype()).str() + dimsString(dims);
}

namespace {
// Collects protobuf text parse errors as `file:line:col: message`.
class TextErrors : public google::protobuf::io::ErrorCollector {
public:
  explicit TextErrors(llvm::StringRef source) : source_(source.str()) {}
  void AddError(int line, int column, const std::string &message) override {
    if (first_.empty())
      first_ = llvm::formatv("{0}:{1}:{2}: {3}", source_, line + 1, column + 1, message).str();
  }
  void AddWarning(int, int, const std::string &) override {}
  const std::string &first() const { return first_; }

private:
  std::string source_, first_;
};

llvm::Error checkVersion(const proto::Program &prog, llvm::StringRef source) {
  if (prog.version() > kFormatVersion)
    return makeError("{0}: program format version {1} is newer than this oar ({2})", source,
                     prog.version(), kFormatVersion);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<proto::Program> parseProgramText(llvm::StringRef text, llvm::StringRef sourceName) {
  proto::Program prog;
  google::protobuf::TextFormat::Parser parser;
  TextErrors errors(sourceName);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text.str(), &prog))
    return makeError("{0}", errors.first().empty() ? (sourceName + ": not a program").str()
                                                   : errors.first());
  if (llvm::Error err = checkVersion(prog, sourceName))
    return err;
  return prog;
}

llvm::Expected<proto::Program> loadProgram(llvm::StringRef path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  if (!buf)
    return makeError("{0}: cannot read program: {1}", path, buf.getError().message());
  llvm::StringRef bytes = (*buf)->getBuffer();
  if (path.endswith(".pbtxt"))
    return parseProgramText(bytes, path);
  proto::Program prog;
  if (bytes.empty())
    return makeError("{0}: empty file is not a program", path);
  if (!prog.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    return makeError("{0}: not a valid binary program (truncated or not protobuf; text programs "
                     "need the .pbtxt extension)",
                     path);
  if (prog.blocks_size() == 0)
    return makeError("{0}: program has no blocks (is this an oar program file?)", path);
  if (llvm::Error err = checkVersion(prog, path))
    return err;
  return prog;
}

std::string programText(const proto::Program &prog) {
  google::protobuf::TextFormat::Printer printer;
  printer.SetUseShortRepeatedPrimitives(true);
  std::string out;
  printer.PrintToString(prog, &out);
  return out;
}

bool appendProgramBytes(const proto::Program &prog, std::string &out) {
  // Programs have no map fields (a test checks), so the default serialization is the
  // deterministic one. It writes into a buffer of the final size: a third of the time a
  // CodedOutputStream over a growing string took (the job digest serializes a whole job).
  return prog.AppendToString(&out);
}

llvm::Error saveProgram(const proto::Program &prog, llvm::StringRef path, llvm::StringRef origin) {
  std::string bytes;
  if (path.endswith(".pbtxt"))
    bytes = "# " + origin.str() + "\n" + programText(prog);
  else if (!appendProgramBytes(prog, bytes))
    return makeError("{0}: cannot write program: its {1} bytes are over protobuf's 2 GiB limit",
                     path, prog.ByteSizeLong());
  return writeFile(path, path, " program", [&](llvm::raw_ostream &os) { os << bytes; });
}

AttrValue::AttrValue(std::vector<int64_t> v) {
  for (int64_t x : v)
    attr.mutable_ints()->add_v(x);
  attr.mutable_ints(); // an empty list is still a list
}
AttrValue::AttrValue(std::vector<float> v) {
  attr.mutable_floats();
  for (float x : v)
    attr.mutable_floats()->add_v(x);
}
AttrValue::AttrValue(std::vector<std::string> v) {
  attr.mutable_strings();
  for (auto &x : v)
    attr.mutable_strings()->add_v(x);
}

static void fillSlots(google::protobuf::RepeatedPtrField<proto::Slot> *slots, const SlotMap &map) {
  for (const auto &[name, vars] : map) {
    proto::Slot *s = slots->Add();
    s->set_slot(name);
    for (const auto &v : vars)
      s->add_names(v);
  }
}

void setAttr(proto::Op &op, llvm::StringRef name, const AttrValue &value) {
  for (proto::Attr &a : *op.mutable_attrs())
    if (a.name() == name) {
      a = value.attr;
      a.set_name(name.str());
      return;
    }
  proto::Attr *a = op.add_attrs();
  *a = value.attr;
  a->set_name(name.str());
  std::sort(op.mutable_attrs()->begin(), op.mutable_attrs()->end(),
            [](const proto::Attr &x, const proto::Attr &y) { return x.name() < y.name(); });
}

proto::Op makeOp(llvm::StringRef type, const SlotMap &inputs, const SlotMap &outputs,
                 const AttrList &attrs, OpRole role) {
  proto::Op op;
  op.set_type(type.str());
  fillSlots(op.mutable_inputs(), inputs);
  fillSlots(op.mutable_outputs(), outputs);
  for (const auto &[name, value] : attrs)
    setAttr(op, name, value);
  op.set_role(role);
  return op;
}

static const proto::Slot *findSlot(const google::protobuf::RepeatedPtrField<proto::Slot> &s,
                                   llvm::StringRef slot) {
  for (const proto::Slot &x : s)
    if (x.slot() == slot)
      return &x;
  return nullptr;
}
const proto::Slot *findInputSlot(const proto::Op &op, llvm::StringRef slot) {
  return findSlot(op.inputs(), slot);
}
const proto::Slot *findOutputSlot(const proto::Op &op, llvm::StringRef slot) {
  return findSlot(op.outputs(), slot);
}

const std::string *slotName(const proto::Slot *slot, size_t i) {
  if (!slot || i >= static_cast<size_t>(slot->names_size()) || slot->names(i) == kEmptyVarName)
    return nullptr;
  return &slot->names(i);
}

static std::vector<std::string> slotNames(const proto::Slot *s) {
  return s ? std::vector<std::string>(s->names().begin(), s->names().end())
           : std::vector<std::string>();
}
std::vector<std::string> opInputs(const proto::Op &op, llvm::StringRef slot) {
  return slotNames(findInputSlot(op, slot));
}
std::vector<std::string> opOutputs(const proto::Op &op, llvm::StringRef slot) {
  return slotNames(findOutputSlot(op, slot));
}

static std::vector<std::string> allNames(const google::protobuf::RepeatedPtrField<proto::Slot> &s) {
  std::vector<std::string> out;
  for (const proto::Slot &x : s)
    out.insert(out.end(), x.names().begin(), x.names().end());
  return out;
}
std::vector<std::string> allInputNames(const proto::Op &op) { return allNames(op.inputs()); }
std::vector<std::string> allOutputNames(const proto::Op &op) { return allNames(op.outputs()); }

const proto::Attr *findAttr(const proto::Op &op, llvm::StringRef name) {
  for (const proto::Attr &a : op.attrs())
    if (a.name() == name)
      return &a;
  return nullptr;
}

const proto::Var *findVar(const proto::Block &block, llvm::StringRef name) {
  for (const proto::Var &v : block.vars())
    if (v.name() == name)
      return &v;
  return nullptr;
}
proto::Var *findVar(proto::Block &block, llvm::StringRef name) {
  for (proto::Var &v : *block.mutable_vars())
    if (v.name() == name)
      return &v;
  return nullptr;
}

static void setDense(proto::Var *v, DType dtype, llvm::ArrayRef<int64_t> dims) {
  v->set_kind(proto::DENSE_TENSOR);
  v->mutable_type()->set_dtype(dtype);
  v->mutable_type()->clear_dims();
  v->mutable_type()->mutable_dims()->Add(dims.begin(), dims.end());
}

proto::Var &declareVar(proto::Block &block, llvm::StringRef name, DType dtype,
                       llvm::ArrayRef<int64_t> dims) {
  proto::Var *v = findVar(block, name);
  if (!v) {
    v = block.add_vars();
    v->set_name(name.str());
  }
  setDense(v, dtype, dims);
  return *v;
}

VarTable::VarTable(proto::Block &block) : block_(block) {
  for (proto::Var &v : *block.mutable_vars())
    index_[v.name()] = &v;
}

void VarTable::reserve(size_t more) {
  index_.reserve(index_.size() + more);
  block_.mutable_vars()->Reserve(block_.vars_size() + static_cast<int>(more));
}

proto::Var &VarTable::declare(llvm::StringRef name, DType dtype, llvm::ArrayRef<int64_t> dims) {
  auto [entry, added] = index_.try_emplace(name, nullptr);
  if (added) {
    entry->second = block_.add_vars();
    entry->second->set_name(name.str());
    entry->first = entry->second->name(); // the same key, viewing the stored name, not the caller's
  }
  proto::Var *v = entry->second;
  setDense(v, dtype, dims);
  return *v;
}

proto::Program newProgram() {
  proto::Program prog;
  prog.set_version(kFormatVersion);
  proto::Block *b = prog.add_blocks();
  b->set_idx(0);
  b->set_parent(-1);
  return prog;
}

} // namespace oar
