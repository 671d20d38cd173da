// The trainer side of the DistributeTranspiler.
#include "google/protobuf/util/field_mask_util.h"
#include "ir/names.h"
#include "support/error.h"
#include "transpiler/collective_program.h"
#include "transpiler/gradient_buckets.h"
#include "transpiler/op_writer.h"
#include "transpiler/transpiler.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace oar {

namespace {

/// Var names viewing strings that the programs or the plan own: no copy, no allocation per name.
using NameSet = llvm::DenseSet<llvm::StringRef>;

proto::Op distOp(llvm::StringRef type, const SlotMap &in, const SlotMap &out,
                 const AttrList &attrs) {
  return makeOp(type, in, out, attrs, proto::DIST);
}

// The per-param ops below list one name per block, so they are written in place (OpWriter).

/// The "epmap" attr: the endpoint of each of a param's blocks.
void addEpmap(OpWriter &op, const ParamPlan &p) {
  OpWriter::Names &eps = op.strings("epmap");
  eps.Reserve(static_cast<int>(p.blocks.size()));
  for (const VarBlock &b : p.blocks)
    eps.Add(std::string(b.endpoint));
}

/// A local sparse table's gradient (selected rows: the rows a batch looked up) as a dense
/// tensor, zeros elsewhere: the pservers hold the table as a dense param, sliced and updated as
/// any other (for sgd and adagrad a zero row leaves its weights as they are, bit for bit). Such a
/// table travels whole to every trainer each step anyway (its recv), so its gradient costs no
/// more than that. Returns the dense gradient's name.
std::string appendDensify(proto::Block &block, VarTable &vars, const ParamPlan &p) {
  std::string zeros = zerosName(p.param), dense = denseGradName(p.grad);
  vars.declare(zeros, p.dtype, p.dims);
  vars.declare(dense, p.dtype, p.dims);
  OpWriter(block, "fill_zeros_like", proto::DIST).input("X", p.param).output("Out", zeros);
  OpWriter sum(block, "sum", proto::DIST);
  OpWriter::Names &in = sum.inputs("X");
  in.Add(std::string(p.grad));
  in.Add(std::string(zeros));
  sum.output("Out", dense);
  return dense;
}

/// split_byref of a param's grad into its blocks (when split), then send of the blocks.
void appendSend(proto::Block &block, VarTable &vars, const ParamPlan &p) {
  int numBlocks = static_cast<int>(p.blocks.size());
  std::string grad = p.grad;
  if (const proto::Var *v = vars.find(p.grad); v && v->kind() == proto::SELECTED_ROWS) {
    grad = appendDensify(block, vars, p);
    if (!p.split()) // the message carries the gradient's own name
      OpWriter(block, "scale", proto::DIST).input("X", grad).output("Out", p.grad);
  }
  if (p.split()) {
    OpWriter split(block, "split_byref", proto::DIST);
    split.input("X", grad);
    OpWriter::Names &outs = split.outputs("Out");
    outs.Reserve(numBlocks);
    for (const VarBlock &b : p.blocks) {
      vars.declare(b.gradName, p.dtype, b.dims);
      outs.Add(std::string(b.gradName));
    }
    split.attr("axis", int64_t(0)).attr("sections", p.blockRows());
  }
  OpWriter send(block, "send", proto::DIST);
  OpWriter::Names &names = send.inputs("X");
  names.Reserve(numBlocks);
  for (const VarBlock &b : p.blocks)
    names.Add(std::string(b.gradName));
  addEpmap(send, p);
}

/// recv of a param's blocks, for the main and the startup program.
void appendRecv(proto::Block &block, VarTable &vars, const ParamPlan &p) {
  OpWriter recv(block, "recv", proto::DIST);
  OpWriter::Names &names = recv.outputs("Out");
  names.Reserve(static_cast<int>(p.blocks.size()));
  for (const VarBlock &b : p.blocks) {
    names.Add(std::string(b.name));
    if (p.split())
      vars.declare(b.name, p.dtype, b.dims);
  }
  addEpmap(recv, p);
}

void appendConcat(proto::Block &block, const ParamPlan &p) {
  if (!p.split())
    return;
  OpWriter concat(block, "concat", proto::DIST);
  OpWriter::Names &names = concat.inputs("X");
  names.Reserve(static_cast<int>(p.blocks.size()));
  for (const VarBlock &b : p.blocks)
    names.Add(std::string(b.name));
  concat.output("Out", p.param).attr("axis", int64_t(0));
}

/// Adds every name `op` writes to `names`.
void insertOutputNames(const proto::Op &op, NameSet &names) {
  for (const proto::Slot &s : op.outputs())
    for (const std::string &n : s.names())
      names.insert(n);
}

/// Removes the vars of `block` whose names are not in `keep`.
void keepOnlyVars(proto::Block &block, const NameSet &keep) {
  auto *vars = block.mutable_vars();
  vars->erase(std::remove_if(vars->begin(), vars->end(),
                             [&](const proto::Var &v) { return !keep.count(v.name()); }),
              vars->end());
}

/// Drops vars no op, feed or report refers to (e.g. optimizer state the pservers now own).
void pruneVars(proto::Program &prog) {
  NameSet used;
  for (const proto::Op &op : prog.blocks(0).ops()) {
    for (const proto::Slot &s : op.inputs())
      for (const std::string &n : s.names())
        used.insert(n);
    insertOutputNames(op, used);
  }
  for (const proto::DataFeed *f : {&prog.train_feed(), &prog.test_feed()})
    for (const std::string &c : f->columns())
      used.insert(c);
  used.insert(prog.loss());
  for (const std::string &m : prog.metrics())
    used.insert(m);
  for (const std::string &p : prog.predictions())
    used.insert(p);
  keepOnlyVars(*prog.mutable_blocks(0), used);
}

/// The paths of all fields of `type` but `skip`.
google::protobuf::FieldMask allFieldsBut(const google::protobuf::Descriptor &type,
                                         llvm::StringRef skip) {
  google::protobuf::FieldMask mask;
  for (int i = 0; i < type.field_count(); ++i)
    if (type.field(i)->name() != skip)
      mask.add_paths(type.field(i)->name());
  return mask;
}

/// Copies `prog` into the empty `out` but for block 0's ops, for the caller to add back the ops
/// it keeps: copying every op only to drop many (the optimizer's, the params' initialisers) was
/// a large share of building the trainer's programs. Other blocks are copied whole.
void copyWithoutOps(const proto::Program &prog, proto::Program &out) {
  using google::protobuf::util::FieldMaskUtil;
  FieldMaskUtil::MergeMessageTo(prog, allFieldsBut(*proto::Program::descriptor(), "blocks"), {},
                                &out);
  for (const proto::Block &b : prog.blocks()) {
    if (out.blocks_size() == 0)
      FieldMaskUtil::MergeMessageTo(b, allFieldsBut(*proto::Block::descriptor(), "ops"), {},
                                    out.add_blocks());
    else
      *out.add_blocks() = b;
  }
}

} // namespace

void setDistInfo(proto::Program &prog, const TranspileInputs &in, Role role, int64_t pserverIndex) {
  const DistributePlan &plan = in.plan;
  proto::DistributeInfo &d = *prog.mutable_dist();
  d.set_mode(modeName(plan.config.mode).str());
  d.set_trainers(plan.config.trainers);
  d.clear_pservers();
  for (const auto &ep : plan.config.pservers)
    d.add_pservers(ep);
  d.set_role(roleName(role).str());
  d.set_pserver_index(pserverIndex);
  d.set_geo_k_steps(plan.config.mode == Mode::Geo ? plan.config.geoKSteps : 0);
  d.set_plan_digest(in.digests().plan);
  d.set_checkpoint_digest(in.digests().checkpoint);
  d.set_hybrid(plan.config.hybrid);
}

llvm::Error buildTrainerProgram(const TranspileInputs &in, proto::Program &out) {
  if (in.plan.config.mode == Mode::Geo) {
    buildGeoTrainerProgram(in, out);
    return llvm::Error::success();
  }
  const DistributePlan &plan = in.plan;
  const proto::Block &src = in.main.blocks(0);
  copyWithoutOps(in.main, out);
  proto::Block &block = *out.mutable_blocks(0);
  VarTable vars(block);

  // The op that last writes each grad; sends go right after it so they overlap the backward.
  llvm::DenseMap<llvm::StringRef, int> lastWriter; // grad -> op index
  for (const ParamPlan &p : plan.params)
    lastWriter[p.grad] = -1;
  for (int i = 0; i < src.ops_size(); ++i)
    if (src.ops(i).role() != proto::OPTIMIZE)
      for (const proto::Slot &s : src.ops(i).outputs())
        for (const std::string &o : s.names())
          if (auto it = lastWriter.find(o); it != lastWriter.end())
            it->second = i;
  std::vector<std::vector<const ParamPlan *>> sendAfter(src.ops_size()); // by op index
  for (const ParamPlan &p : plan.params) {
    int writer = lastWriter.lookup(p.grad);
    if (writer < 0)
      return makeError("no op writes {0}, the gradient of {1}", p.grad, p.param);
    sendAfter[writer].push_back(&p);
  }

  // A hybrid job's trainers average their dense gradients and run those params' optimizer
  // themselves; the tables' updates (the distributed-table pass's pushes) go to the pservers.
  std::vector<std::string> denseGrads;
  int firstDenseOptimizer = -1;
  if (plan.config.hybrid)
    if (llvm::Error err = denseGradients(src, denseGrads, firstDenseOptimizer, false))
      return err;
  // One all-reduce after backward: the communicator is not thread safe, and a bucket summing
  // on another thread could meet a failure path that uses it while backward pushes rows.
  DistributeConfig oneAllreduce = plan.config;
  oneAllreduce.bucketBytes = 0;
  auto allreduce = planGradientAllreduce(src, denseGrads, firstDenseOptimizer, oneAllreduce);
  if (!allreduce)
    return allreduce.takeError();
  for (int i = 0; i < src.ops_size(); ++i) {
    for (proto::Op &op : allreduce->before[i])
      *block.add_ops() = std::move(op);
    if (src.ops(i).role() == proto::OPTIMIZE && !plan.config.hybrid)
      continue; // the pservers run the optimizer
    *block.add_ops() = src.ops(i);
    for (const ParamPlan *p : sendAfter[i])
      appendSend(block, vars, *p);
  }
  bool sync = plan.config.mode == Mode::Sync;
  if (sync)
    *block.add_ops() = distOp("send_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params)
    appendRecv(block, vars, p);
  if (sync)
    *block.add_ops() = distOp("fetch_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params)
    appendConcat(block, p);
  pruneVars(out);
  setDistInfo(out, in, Role::Trainer, -1);
  return llvm::Error::success();
}

void buildTrainerStartup(const TranspileInputs &in, const proto::Program &trainerMain,
                         proto::Program &out) {
  const DistributePlan &plan = in.plan;
  copyWithoutOps(in.startup, out);
  proto::Block &block = *out.mutable_blocks(0);
  VarTable vars(block);
  NameSet params, needed;
  for (const ParamPlan &p : plan.params)
    params.insert(p.param);
  for (const proto::Var &v : trainerMain.blocks(0).vars())
    needed.insert(v.name());
  // Keep initialisers of what the trainer still uses; params come from the pservers.
  for (const proto::Op &op : in.startup.blocks(0).ops()) {
    bool keep = false;
    for (const proto::Slot &s : op.outputs())
      for (const std::string &o : s.names())
        keep |= needed.count(o) && !params.count(o);
    if (keep)
      *block.add_ops() = op;
  }
  for (const ParamPlan &p : plan.params)
    appendRecv(block, vars, p);
  if (plan.config.mode == Mode::Sync)
    *block.add_ops() = distOp("fetch_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params) {
    appendConcat(block, p);
    if (plan.config.mode == Mode::Geo)
      appendGeoSyncedCopy(block, vars, p);
  }
  NameSet written;
  for (const proto::Op &op : block.ops())
    insertOutputNames(op, written);
  keepOnlyVars(block, written);
  setDistInfo(out, in, Role::Trainer, -1);
}

} // namespace oar
