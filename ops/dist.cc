// Ops the DistributeTranspiler inserts. Their kernels talk to pservers through the runtime.
#include "ops/common.h"

namespace oar::ops {

// Vars these ops write are declared by the transpiler; nothing to infer.
static llvm::Error inferNothing(InferContext &) { return llvm::Error::success(); }

OAR_OP(send)
    .summary("send each X[i] to the pserver at epmap[i] (a gradient or GEO delta block)")
    .input("X", "blocks to send", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each X")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(recv)
    .summary("Out[i] = the var of that name held by the pserver at epmap[i]")
    .output("Out", "blocks to receive", kDuplicable)
    .attr<std::vector<std::string>>("epmap", {}, "endpoint of each Out")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(send_barrier)
    .summary("tell every pserver this trainer has sent all of this step's gradients")
    .attr<std::vector<std::string>>("endpoints", {}, "every pserver")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(fetch_barrier)
    .summary("tell every pserver this trainer has fetched all of this step's parameters")
    .attr<std::vector<std::string>>("endpoints", {}, "every pserver")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(listen_and_serv)
    .summary("a pserver's loop: receive gradients, run optimize blocks, serve parameters")
    .attr<std::string>("endpoint", "", "host:port this pserver serves")
    .attr<int64_t>("fanin", 1, "number of trainers")
    .attr<std::string>("mode", "sync", "sync | async | geo")
    .attr<std::vector<std::string>>("grad_to_block_id", {},
                                    "`<grad block>:<optimize block index>` for each grad block")
    .attr<std::vector<std::string>>("param_blocks", {}, "the param blocks this pserver serves")
    .attr<std::vector<std::string>>("block_params", {}, "the whole param of each param block")
    .attr<std::vector<int64_t>>("block_row_begin", {},
                                "first row (element for rank 1) of each param block in its param")
    .attr<std::vector<int64_t>>("optimize_blocks", {}, "sub-block indices, one per param block")
    .attr<std::string>("plan_digest", "", "hash of the distribute plan; trainers must match")
    .inferShape(inferNothing)
    .noGrad("communication");

OAR_OP(geo_sync)
    .summary("every k_steps: send (Param - synced)/trainers per block, pull the params, rebase")
    .input("Param", "the trainer's local parameters", kDuplicable)
    .attr<int64_t>("k_steps", 100, "steps between syncs")
    .attr<int64_t>("trainers", 1, "number of trainers (the delta is divided by it)")
    .attr<std::vector<int64_t>>("sections", {}, "number of blocks of each Param")
    .attr<std::vector<int64_t>>("block_rows", {}, "rows (elements for rank 1) of each block")
    .attr<std::vector<std::string>>("block_names", {}, "the pserver name of each block")
    .attr<std::vector<std::string>>("epmap", {}, "the endpoint of each block")
    .inferShape(inferNothing)
    .noGrad("communication");

} // namespace oar::ops
