// The trainer side of the DistributeTranspiler.
#include <map>
#include <set>

#include "ir/error.h"
#include "ir/names.h"
#include "transpiler/transpiler.h"

namespace oar {

namespace {

std::vector<int64_t> blockRows(const ParamPlan &p) {
  std::vector<int64_t> rows;
  for (const VarBlock &b : p.blocks)
    rows.push_back(b.dims[0]);
  return rows;
}

proto::Op distOp(llvm::StringRef type, const SlotMap &in, const SlotMap &out,
                 const AttrList &attrs) {
  return makeOp(type, in, out, attrs, proto::DIST);
}

/// recv of a param's blocks, for the main and the startup program.
void appendRecv(proto::Block &block, VarTable &vars, const ParamPlan &p) {
  std::vector<std::string> names, eps;
  for (const VarBlock &b : p.blocks) {
    names.push_back(b.name);
    eps.push_back(b.endpoint);
    if (p.split())
      vars.declare(b.name, p.dtype, b.dims);
  }
  *block.add_ops() = distOp("recv", {}, {{"Out", names}}, {{"epmap", eps}});
}

void appendConcat(proto::Block &block, const ParamPlan &p) {
  if (!p.split())
    return;
  std::vector<std::string> names;
  for (const VarBlock &b : p.blocks)
    names.push_back(b.name);
  *block.add_ops() = distOp("concat", {{"X", names}}, {{"Out", {p.param}}}, {{"axis", int64_t(0)}});
}

/// Removes the vars of `block` whose names are not in `keep`.
void keepOnlyVars(proto::Block &block, const std::set<std::string> &keep) {
  auto *vars = block.mutable_vars();
  vars->erase(std::remove_if(vars->begin(), vars->end(),
                             [&](const proto::Var &v) { return !keep.count(v.name()); }),
              vars->end());
}

/// Drops vars no op, feed or report refers to (e.g. optimizer state the pservers now own).
void pruneVars(proto::Program &prog, const std::set<std::string> &keep) {
  std::set<std::string> used(keep);
  for (const proto::Op &op : prog.blocks(0).ops()) {
    for (const auto &n : allInputNames(op))
      used.insert(n);
    for (const auto &n : allOutputNames(op))
      used.insert(n);
  }
  for (const proto::DataFeed *f : {&prog.train_feed(), &prog.test_feed()})
    used.insert(f->columns().begin(), f->columns().end());
  used.insert(prog.loss());
  used.insert(prog.metrics().begin(), prog.metrics().end());
  keepOnlyVars(*prog.mutable_blocks(0), used);
}

} // namespace

void setDistInfo(proto::Program &prog, const DistributePlan &plan, llvm::StringRef role,
                 int64_t pserverIndex) {
  proto::DistributeInfo &d = *prog.mutable_dist();
  d.set_mode(plan.config.mode);
  d.set_trainers(plan.config.trainers);
  d.clear_pservers();
  for (const auto &ep : plan.config.pservers)
    d.add_pservers(ep);
  d.set_role(role.str());
  d.set_pserver_index(pserverIndex);
  d.set_geo_k_steps(plan.config.mode == "geo" ? plan.config.geoKSteps : 0);
  d.set_plan_digest(plan.digest());
}

llvm::Expected<proto::Program> buildTrainerProgram(const proto::Program &main,
                                                   const DistributePlan &plan) {
  proto::Program out = main;
  proto::Block &block = *out.mutable_blocks(0);
  block.clear_ops();
  VarTable vars(block);
  const proto::Block &src = main.blocks(0);
  bool geo = plan.config.mode == "geo";

  if (geo) { // the trainer keeps training locally; geo_sync exchanges deltas every k steps
    *block.mutable_ops() = src.ops();
    std::vector<std::string> params, names, eps;
    std::vector<int64_t> sections, rows;
    for (const ParamPlan &p : plan.params) {
      params.push_back(p.param);
      sections.push_back(static_cast<int64_t>(p.blocks.size()));
      for (const VarBlock &b : p.blocks) {
        names.push_back(b.name);
        eps.push_back(b.endpoint);
        rows.push_back(b.dims[0]);
      }
      vars.declare(syncedName(p.param), p.dtype, p.dims).set_persistable(true);
    }
    *block.add_ops() = distOp("geo_sync", {{"Param", params}}, {},
                              {{"k_steps", plan.config.geoKSteps},
                               {"trainers", plan.config.trainers},
                               {"sections", sections},
                               {"block_rows", rows},
                               {"block_names", names},
                               {"epmap", eps}});
    setDistInfo(out, plan, "trainer", -1);
    return out;
  }

  // The op that last writes each grad; sends go right after it so they overlap the backward.
  std::map<std::string, const ParamPlan *> byGrad;
  for (const ParamPlan &p : plan.params)
    byGrad[p.grad] = &p;
  std::map<int, std::vector<const ParamPlan *>> sendAfter;
  std::map<std::string, int> lastWriter;
  for (int i = 0; i < src.ops_size(); ++i)
    if (src.ops(i).role() != proto::OPTIMIZE)
      for (const std::string &o : allOutputNames(src.ops(i)))
        if (byGrad.count(o))
          lastWriter[o] = i;
  for (const ParamPlan &p : plan.params) {
    auto it = lastWriter.find(p.grad);
    if (it == lastWriter.end())
      return makeError("no op writes {0}, the gradient of {1}", p.grad, p.param);
    sendAfter[it->second].push_back(&p);
  }

  for (int i = 0; i < src.ops_size(); ++i) {
    if (src.ops(i).role() == proto::OPTIMIZE)
      continue; // the pservers run the optimizer
    *block.add_ops() = src.ops(i);
    for (const ParamPlan *p : sendAfter[i]) {
      std::vector<std::string> names, eps;
      for (const VarBlock &b : p->blocks) {
        names.push_back(b.gradName);
        eps.push_back(b.endpoint);
        if (p->split())
          vars.declare(b.gradName, p->dtype, b.dims);
      }
      if (p->split())
        *block.add_ops() = distOp("split_byref", {{"X", {p->grad}}}, {{"Out", names}},
                                  {{"axis", int64_t(0)}, {"sections", blockRows(*p)}});
      *block.add_ops() = distOp("send", {{"X", names}}, {}, {{"epmap", eps}});
    }
  }
  bool sync = plan.config.mode == "sync";
  if (sync)
    *block.add_ops() = distOp("send_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params)
    appendRecv(block, vars, p);
  if (sync)
    *block.add_ops() = distOp("fetch_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params)
    appendConcat(block, p);
  pruneVars(out, {});
  setDistInfo(out, plan, "trainer", -1);
  return out;
}

proto::Program buildTrainerStartup(const proto::Program &startup, const proto::Program &trainerMain,
                                   const DistributePlan &plan) {
  proto::Program out = startup;
  proto::Block &block = *out.mutable_blocks(0);
  block.clear_ops();
  VarTable vars(block);
  std::set<std::string> params, needed;
  for (const ParamPlan &p : plan.params)
    params.insert(p.param);
  for (const proto::Var &v : trainerMain.blocks(0).vars())
    needed.insert(v.name());
  // Keep initialisers of what the trainer still uses; params come from the pservers.
  for (const proto::Op &op : startup.blocks(0).ops()) {
    bool keep = false;
    for (const std::string &o : allOutputNames(op))
      keep |= needed.count(o) && !params.count(o);
    if (keep)
      *block.add_ops() = op;
  }
  for (const ParamPlan &p : plan.params)
    appendRecv(block, vars, p);
  if (plan.config.mode == "sync")
    *block.add_ops() = distOp("fetch_barrier", {}, {}, {{"endpoints", plan.config.pservers}});
  for (const ParamPlan &p : plan.params) {
    appendConcat(block, p);
    if (plan.config.mode == "geo") { // the last synced copy starts as the received param
      vars.declare(syncedName(p.param), p.dtype, p.dims).set_persistable(true);
      *block.add_ops() =
          distOp("scale", {{"X", {p.param}}}, {{"Out", {syncedName(p.param)}}}, {{"scale", 1.0f}});
    }
  }
  std::set<std::string> written;
  for (const proto::Op &op : block.ops())
    for (const auto &n : allOutputNames(op))
      written.insert(n);
  keepOnlyVars(block, written);
  setDistInfo(out, plan, "trainer", -1);
  return out;
}

} // namespace oar
