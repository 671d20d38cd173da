// Reading a pserver's plan from its program.
#include "runtime/pserver/pserver_plan.h"

#include "support/error.h"

namespace oar::runtime {

llvm::Expected<PserverPlan> PserverPlan::read(const proto::Program &program) {
  const proto::Block &root = program.blocks(0);
  const proto::Op *listen = nullptr;
  for (const proto::Op &op : root.ops())
    if (op.type() == "listen_and_serv")
      listen = &op;
  if (!listen)
    return makeError("the pserver program has no listen_and_serv op");
  PserverPlan plan;
  ops::AttrReader attrs(*listen, *ops::lookupOp("listen_and_serv"));
  plan.endpoint = attrs.getString("endpoint");
  auto named = parseMode(attrs.getString("mode"));
  if (!named)
    return addContext(named.takeError(), "the pserver program's listen_and_serv");
  plan.mode = *named;
  plan.fanin = attrs.getInt("fanin");
  plan.digest = attrs.getString("plan_digest");
  for (const std::string &entry : attrs.getStrings("grad_to_block_id")) {
    auto [name, idx] = llvm::StringRef(entry).rsplit(':');
    int block = 0;
    if (idx.getAsInteger(10, block) || block <= 0 || block >= program.blocks_size())
      return makeError("listen_and_serv: bad grad_to_block_id entry \"{0}\"", entry);
    plan.gradToBlock[name] = block;
  }
  for (const std::string &p : attrs.getStrings("param_blocks"))
    plan.paramBlocks.insert(p);
  for (const proto::Var &v : root.vars()) {
    ops::VarType t;
    t.dtype = v.type().dtype();
    t.dims.assign(v.type().dims().begin(), v.type().dims().end());
    plan.declared[v.name()] = t;
  }
  return plan;
}

llvm::StringMap<ops::VarType> PserverPlan::gradTypes() const {
  llvm::StringMap<ops::VarType> types;
  for (const auto &entry : gradToBlock)
    types[entry.getKey()] = declared.lookup(entry.getKey());
  return types;
}

int64_t PserverPlan::largestGradientBytes() const {
  int64_t largest = 0;
  for (const auto &entry : gradToBlock) {
    const ops::VarType &t = declared.lookup(entry.getKey());
    int64_t bytes = static_cast<int64_t>(dtypeSize(t.dtype));
    for (int64_t d : t.dims)
      bytes *= std::max<int64_t>(d, 1);
    largest = std::max(largest, bytes);
  }
  return largest;
}

llvm::Error PserverPlan::checkPayload(const Message &m, llvm::StringRef var) const {
  ops::VarType want = declared.lookup(var);
  std::vector<int64_t> dims = m.dims();
  if (!m.hasTensor() || m.header.dtype() != want.dtype ||
      llvm::ArrayRef<int64_t>(dims) != llvm::ArrayRef<int64_t>(want.dims))
    return makeError("{0} must be {1} but the message holds {2}{3}", var, ops::typeString(want),
                     dtypeName(m.header.dtype()), dimsString(dims));
  return llvm::Error::success();
}

} // namespace oar::runtime
