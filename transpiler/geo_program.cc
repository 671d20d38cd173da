// GEO mode (Paddle's GeoSGD): trainers train locally and every k steps send how far each param
// moved since the last sync; pservers add those deltas in. Every GEO piece of the trainer's and
// the pservers' programs is written here.
#include "ir/names.h"
#include "transpiler/op_writer.h"
#include "transpiler/transpiler.h"

namespace oar {

void buildGeoTrainerProgram(const TranspileInputs &in, proto::Program &out) {
  const DistributePlan &plan = in.plan;
  out = in.main;
  proto::Block &block = *out.mutable_blocks(0);
  VarTable vars(block);
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
  *block.add_ops() = makeOp("geo_sync", {{"Param", params}}, {},
                            {{"k_steps", plan.config.geoKSteps},
                             {"trainers", plan.config.trainers},
                             {"sections", sections},
                             {"block_rows", rows},
                             {"block_names", names},
                             {"epmap", eps}},
                            proto::DIST);
  setDistInfo(out, in, Role::Trainer, -1);
}

void appendGeoSyncedCopy(proto::Block &block, VarTable &vars, const ParamPlan &p) {
  std::string synced = syncedName(p.param);
  vars.declare(synced, p.dtype, p.dims).set_persistable(true);
  OpWriter(block, "scale", proto::DIST)
      .input("X", p.param)
      .output("Out", synced)
      .attr("scale", 1.0f);
}

std::string appendGeoDeltaBlock(const ParamPlan &p, const VarBlock &b, proto::Block &sub,
                                VarTable &vars) {
  std::string delta = deltaName(b.name);
  vars.declare(delta, p.dtype, b.dims);
  OpWriter(sub, "elementwise_add", proto::OPTIMIZE)
      .input("X", b.name)
      .input("Y", delta)
      .output("Out", b.name);
  return delta + ":" + std::to_string(sub.idx());
}

} // namespace oar
