// CPU kernels of send, recv, send_barrier, fetch_barrier, listen_and_serv and geo_sync.
#include <cstring>

#include "executor/kernel.h"
#include "ir/names.h"
#include "runtime/node/run_env.h"
#include "support/error.h"

namespace oar::runtime {

namespace {

llvm::Error sendKernel(KernelContext &ctx) {
  auto env = envOf(ctx, true);
  if (!env)
    return env.takeError();
  auto names = opInputs(ctx.op(), "X");
  auto eps = ctx.attrs().getStrings("epmap");
  std::vector<std::pair<std::string, const Tensor *>> vars;
  for (size_t i = 0; i < names.size(); ++i)
    vars.push_back({names[i], &ctx.input("X", i)});
  return (*env)->comm->sendVars(vars, eps);
}

/// The (var, endpoint) pairs that the recv ops after `from` fetch: up to the next fetch_barrier,
/// or with `adjacentOnly`, only the recvs right after it.
std::vector<std::pair<std::string, std::string>>
recvsAfter(const proto::Block &block, const proto::Op &from, bool adjacentOnly) {
  std::vector<std::pair<std::string, std::string>> vars;
  int i = 0;
  while (i < block.ops_size() && &block.ops(i) != &from)
    ++i;
  for (++i; i < block.ops_size() && block.ops(i).type() != "fetch_barrier"; ++i) {
    const proto::Op &op = block.ops(i);
    if (op.type() != "recv") {
      if (adjacentOnly)
        break;
      continue;
    }
    const proto::Attr *epmap = findAttr(op, "epmap");
    auto outs = opOutputs(op, "Out");
    if (!epmap || epmap->strings().v_size() != static_cast<int>(outs.size()))
      return {}; // malformed: let the recv kernel report it
    for (size_t k = 0; k < outs.size(); ++k)
      vars.push_back({outs[k], epmap->strings().v(k)});
  }
  return vars;
}

// A run of recv ops (one per param, as the transpiler writes them) is fetched in one round trip
// by its first op; the others find their replies waiting.
llvm::Error recvKernel(KernelContext &ctx) {
  auto env = envOf(ctx, true);
  if (!env)
    return env.takeError();
  auto names = opOutputs(ctx.op(), "Out");
  std::vector<Tensor *> out;
  for (const std::string &n : names)
    out.push_back(&ctx.scope().get(n));
  // Only the first recv of a run looks for the rest; the others find their replies waiting.
  std::vector<std::pair<std::string, std::string>> ahead;
  if (!(*env)->comm->prefetched(names) && (*env)->program && (*env)->program->blocks_size() > 0)
    ahead = recvsAfter((*env)->program->blocks(0), ctx.op(), /*adjacentOnly=*/true);
  return (*env)->comm->getVars(names, ctx.attrs().getStrings("epmap"), out, ahead);
}

llvm::Error sendBarrierKernel(KernelContext &ctx) {
  auto env = envOf(ctx, true);
  if (!env)
    return env.takeError();
  std::vector<std::pair<std::string, std::string>> prefetch;
  if ((*env)->program)
    prefetch = recvsAfter((*env)->program->blocks(0), ctx.op(), /*adjacentOnly=*/false);
  return (*env)->comm->barrier(proto::SEND_BARRIER, prefetch);
}

llvm::Error fetchBarrierKernel(KernelContext &ctx) {
  auto env = envOf(ctx, true);
  return env ? (*env)->comm->barrier(proto::FETCH_BARRIER) : env.takeError();
}

llvm::Error listenAndServKernel(KernelContext &ctx) {
  auto env = envOf(ctx, false);
  if (!env)
    return env.takeError();
  if (!(*env)->program)
    return makeError("listen_and_serv needs the pserver program in its environment");
  PserverLoop loop(*(*env)->program, ctx.scope(), (*env)->pserver, (*env)->pserverRun);
  llvm::Error err = loop.run();
  // The executor adds context to errors as text; keep what kind of failure this was.
  (*env)->trainersFailed = err && err.isA<TrainersFailedError>();
  return err;
}

/// Whether `rows` (one param's blocks, in order) cut `t` into whole blocks: none negative, and
/// adding up to its first dim.
bool coversRows(const Tensor &t, llvm::ArrayRef<int64_t> rows) {
  if (t.rank() == 0)
    return false;
  int64_t left = t.dim(0);
  for (int64_t r : rows) {
    if (r < 0 || r > left)
      return false;
    left -= r;
  }
  return left == 0;
}

// Every k steps: push delta = (param - synced)/trainers per block (and count it as synced:
// synced += delta), pull the params, and rebase the local copy on them:
// local += server - synced; synced = server.
llvm::Error geoSyncKernel(KernelContext &ctx) {
  auto envOr = envOf(ctx, true);
  if (!envOr)
    return envOr.takeError();
  RunEnv &env = **envOr;
  ++env.geoStep;
  int64_t k = ctx.attrs().getInt("k_steps");
  if (!env.forceGeoSync && env.geoStep % k != 0)
    return llvm::Error::success();
  float invTrainers = 1.0f / static_cast<float>(ctx.attrs().getInt("trainers"));
  auto sections = ctx.attrs().getInts("sections"), rows = ctx.attrs().getInts("block_rows");
  auto names = ctx.attrs().getStrings("block_names"), eps = ctx.attrs().getStrings("epmap");
  auto params = opInputs(ctx.op(), "Param");
  size_t block = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    Tensor &local = ctx.scope().get(params[p]);
    Tensor *synced = ctx.scope().find(syncedName(params[p]));
    // Not an input of the op, so the executor did not bring it back from a GPU.
    if (synced && synced->device() != Device::Cpu)
      *synced = synced->to(Device::Cpu);
    if (!synced || synced->numel() != local.numel() || local.dtype() != proto::F32)
      return makeError("geo_sync: {0} has no f32 synced copy {1}", params[p],
                       syncedName(params[p]));
    // geo_sync's shape inference checked the lists' lengths; the rows need the param.
    if (!coversRows(local, llvm::ArrayRef<int64_t>(rows).slice(block, sections[p])))
      return makeError("geo_sync: block_rows of param {0} do not add up to its rows ({1})",
                       params[p], dimsString(local.dims()));
    int64_t width = rowWidth(local), offset = 0;
    std::vector<Tensor> deltas;
    std::vector<std::pair<std::string, const Tensor *>> sends;
    std::vector<std::string> blockNames, blockEps;
    for (int64_t b = 0; b < sections[p]; ++b, ++block) {
      std::vector<int64_t> dims(local.dims().begin(), local.dims().end());
      dims[0] = rows[block];
      Tensor delta(proto::F32, dims);
      float *syncedAt = synced->data<float>() + offset;
      const float *localAt = local.data<float>() + offset;
      for (int64_t i = 0; i < delta.numel(); ++i) {
        delta.data<float>()[i] = (localAt[i] - syncedAt[i]) * invTrainers;
        // What was sent now counts as synced (as Paddle's GEO does): the rest of this trainer's
        // progress goes out in later syncs instead of the same share being sent again.
        syncedAt[i] += delta.data<float>()[i];
      }
      offset += rows[block] * width;
      deltas.push_back(std::move(delta));
      blockNames.push_back(names[block]);
      blockEps.push_back(eps[block]);
    }
    for (size_t i = 0; i < deltas.size(); ++i)
      sends.push_back({deltaName(blockNames[i]), &deltas[i]});
    if (llvm::Error err = env.comm->sendVars(sends, blockEps))
      return err;
    std::vector<Tensor> server(blockNames.size());
    std::vector<Tensor *> serverPtrs;
    for (Tensor &t : server)
      serverPtrs.push_back(&t);
    if (llvm::Error err = env.comm->getVars(blockNames, blockEps, serverPtrs))
      return err;
    offset = 0;
    for (const Tensor &s : server) {
      for (int64_t i = 0; i < s.numel(); ++i) {
        float fresh = s.data<float>()[i];
        local.data<float>()[offset + i] += fresh - synced->data<float>()[offset + i];
        synced->data<float>()[offset + i] = fresh;
      }
      offset += s.numel();
    }
  }
  return llvm::Error::success();
}

} // namespace

#define OAR_DIST_KERNEL(op, fn)                                                                    \
  OAR_KERNEL(op, Device::Cpu, proto::F32, fn);                                                     \
  OAR_KERNEL(op, Device::Cpu, proto::F64, fn);                                                     \
  OAR_KERNEL(op, Device::Cpu, proto::I32, fn);                                                     \
  OAR_KERNEL(op, Device::Cpu, proto::I64, fn)

OAR_DIST_KERNEL(send, sendKernel);
OAR_DIST_KERNEL(recv, recvKernel);
OAR_DIST_KERNEL(send_barrier, sendBarrierKernel);
OAR_DIST_KERNEL(fetch_barrier, fetchBarrierKernel);
OAR_DIST_KERNEL(listen_and_serv, listenAndServKernel);
OAR_DIST_KERNEL(geo_sync, geoSyncKernel);

} // namespace oar::runtime
