// The program verifier.
#include "ops/verify.h"

#include "ir/names.h"
#include "ops/op_registry.h"
#include "support/error.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace oar {

namespace {

const char *attrCaseName(proto::Attr::ValueCase c) {
  switch (c) {
  case proto::Attr::kI:
    return "int";
  case proto::Attr::kF:
    return "float";
  case proto::Attr::kS:
    return "string";
  case proto::Attr::kB:
    return "bool";
  case proto::Attr::kInts:
    return "int list";
  case proto::Attr::kFloats:
    return "float list";
  case proto::Attr::kStrings:
    return "string list";
  case proto::Attr::kBlock:
    return "block";
  default:
    return "unset";
  }
}

/// Checks one op's slots and attrs against its schema.
llvm::Error checkSchema(const proto::Op &op, const ops::OpSchema &schema,
                        const llvm::StringMap<ops::VarType> &types, int numBlocks) {
  auto checkSlots = [&](const google::protobuf::RepeatedPtrField<proto::Slot> &slots,
                        const std::vector<ops::SlotDecl> &decls, const char *what,
                        bool isOutput) -> llvm::Error {
    for (const proto::Slot &s : slots) {
      auto it = llvm::find_if(decls, [&](const ops::SlotDecl &d) { return d.name == s.slot(); });
      if (it == decls.end())
        return makeError("unknown {0} slot {1}", what, s.slot());
      if (!(it->flags & ops::kDuplicable) && s.names_size() > 1)
        return makeError("{0} slot {1} takes one var but has {2}", what, s.slot(), s.names_size());
      for (const std::string &name : s.names()) {
        if (name == kEmptyVarName && isOutput)
          continue;
        auto type = types.find(name);
        if (type == types.end())
          return makeError("{0} slot {1}: var {2} is used but not declared", what, s.slot(), name);
        if (!isOutput && type->second.isRows() && !(it->flags & ops::kSelectedRows))
          return makeError("input slot {0}: var {1} is selected rows but {2} takes only a dense "
                           "tensor there",
                           s.slot(), name, schema.type());
      }
    }
    for (const ops::SlotDecl &d : decls) {
      if (d.flags & ops::kOptional)
        continue;
      auto it = llvm::find_if(slots, [&](const proto::Slot &s) { return s.slot() == d.name; });
      if (it == slots.end() || it->names_size() == 0)
        return makeError("required {0} slot {1} is missing", what, d.name);
    }
    return llvm::Error::success();
  };
  if (llvm::Error err = checkSlots(op.inputs(), schema.inputs(), "input", false))
    return err;
  if (llvm::Error err = checkSlots(op.outputs(), schema.outputs(), "output", true))
    return err;
  for (const proto::Attr &a : op.attrs()) {
    const ops::AttrDecl *decl = schema.findAttr(a.name());
    if (!decl)
      return makeError("unknown attr {0}", a.name());
    if (decl->defaultValue.value_case() != a.value_case())
      return makeError("attr {0} is a {1} but must be a {2}", a.name(),
                       attrCaseName(a.value_case()), attrCaseName(decl->defaultValue.value_case()));
    if (a.value_case() == proto::Attr::kBlock && (a.block() < 0 || a.block() >= numBlocks))
      return makeError("attr {0} names block {1} but the program has {2}", a.name(), a.block(),
                       numBlocks);
  }
  return llvm::Error::success();
}

bool typesAgree(const ops::VarType &declared, const ops::VarType &inferred) {
  if (declared.dtype != inferred.dtype || declared.rank() != inferred.rank() ||
      declared.kind != inferred.kind)
    return false;
  for (int64_t i = 0; i < declared.rank(); ++i)
    if (!ops::dimsAgree(declared.dims[i], inferred.dims[i]))
      return false;
  return true;
}

/// A program that trains (it reads a train feed or seeds a loss gradient) must name its loss,
/// and the metrics it reports must exist.
llvm::Error checkLoss(const proto::Program &prog, llvm::StringRef source) {
  const proto::Block &root = prog.blocks(0);
  bool trains =
      prog.train_feed().columns_size() > 0 ||
      llvm::any_of(root.ops(), [](const proto::Op &op) { return op.role() == proto::LOSS; });
  if (trains && prog.loss().empty())
    return makeError("{0}: the program trains but names no loss var; add `loss: \"<var>\"` (the "
                     "scalar the trainer reports)",
                     source);
  if (!prog.loss().empty() && !findVar(root, prog.loss()))
    return makeError("{0}: loss var {1} is not declared in block 0", source, prog.loss());
  for (const std::string &m : prog.metrics())
    if (!findVar(root, m))
      return makeError("{0}: metric var {1} is not declared in block 0", source, m);
  return llvm::Error::success();
}

} // namespace

llvm::Error verifyProgram(const proto::Program &prog, llvm::StringRef source) {
  if (prog.version() <= 0)
    return makeError("{0}: program has no format version (expected {1})", source, kFormatVersion);
  if (prog.blocks_size() == 0)
    return makeError("{0}: program has no blocks", source);
  for (int b = 0; b < prog.blocks_size(); ++b) {
    const proto::Block &block = prog.blocks(b);
    if (block.idx() != b)
      return makeError("{0}: block {1} says its index is {2}", source, b, block.idx());
    if (b == 0 ? block.parent() != -1 : (block.parent() < 0 || block.parent() >= b))
      return makeError("{0}: block {1} has parent {2}; expected {3}", source, b, block.parent(),
                       b == 0 ? "-1" : "an earlier block");
    // Vars visible here: this block's and its ancestors'.
    llvm::StringMap<ops::VarType> types;
    for (int a = b; a >= 0; a = a == 0 ? -1 : prog.blocks(a).parent())
      for (const proto::Var &v : prog.blocks(a).vars()) {
        if (a == b && types.count(v.name()))
          return makeError("{0}: block {1}: var {2} is declared twice", source, b, v.name());
        if (v.name().empty())
          return makeError("{0}: block {1}: a var has no name", source, b);
        if (a == b && (v.kind() == proto::KIND_UNSET || dtypeSize(v.type().dtype()) == 0))
          return makeError("{0}: block {1}: var {2} has no kind or dtype", source, b, v.name());
        if (a == b && v.kind() == proto::SELECTED_ROWS &&
            (v.type().dims_size() == 0 || v.type().dims(0) < 0))
          return makeError("{0}: block {1}: var {2} is selected rows of {3}; it needs a known "
                           "height: dims [height, width...]",
                           source, b, v.name(), typeString(v.type()));
        types.try_emplace(v.name(), ops::varTypeOf(v));
      }
    for (int i = 0; i < block.ops_size(); ++i) {
      const proto::Op &op = block.ops(i);
      auto where = [&] {
        return llvm::formatv("{0}: block {1}, op #{2} ({3})", source, b, i, op.type()).str();
      };
      const ops::OpSchema *schema = ops::lookupOp(op.type());
      if (!schema)
        return makeError("{0}: unknown op type \"{1}\"", where(), op.type());
      if (llvm::Error err = checkSchema(op, *schema, types, prog.blocks_size()))
        return addContext(std::move(err), where());
      if (!schema->infer())
        continue;
      ops::InferContext ctx(op, *schema, [&](llvm::StringRef name) -> const ops::VarType * {
        auto it = types.find(name);
        return it == types.end() ? nullptr : &it->second;
      });
      if (llvm::Error err = schema->infer()(ctx))
        return addContext(std::move(err), where());
      for (const auto &[name, inferred] : ctx.results()) {
        const ops::VarType &declared = types.find(name)->second;
        if (!typesAgree(declared, inferred))
          return makeError("{0}: output {1} is declared {2} but the op makes {3}", where(), name,
                           ops::typeString(declared), ops::typeString(inferred));
      }
    }
  }
  return checkLoss(prog, source);
}

llvm::Expected<proto::Program> loadVerifiedProgram(llvm::StringRef path) {
  auto prog = loadProgram(path);
  if (!prog)
    return prog.takeError();
  if (llvm::Error err = verifyProgram(*prog, path))
    return err;
  return prog;
}

} // namespace oar
