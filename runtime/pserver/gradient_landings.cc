// The buffers same-host trainers write their gradients into, and what happens when one leaves.
#include "runtime/pserver/gradient_landings.h"

#include "ir/names.h"
#include "runtime/wire/peer_memory.h"

namespace oar::runtime {

void GradientLandings::offer(Scope &scope, bool sync, int64_t t,
                             const llvm::StringMap<ops::VarType> &grads, proto::MsgHeader &reply) {
  llvm::StringMap<Tensor> &mine = byTrainer_[t];
  for (const auto &entry : grads) {
    const ops::VarType &type = entry.getValue();
    int64_t numel = 1;
    for (int64_t d : type.dims)
      numel = d < 0 ? -1 : numel * d;
    if (numel <= 0 || type.isRows() ||
        static_cast<size_t>(numel) * dtypeSize(type.dtype) < kPeerMemoryMinBytes)
      continue;
    auto known = mine.find(entry.getKey());
    if (known == mine.end())
      known = mine.try_emplace(entry.getKey(), Tensor(type.dtype, type.dims)).first;
    const Tensor &landing = known->getValue();
    if (sync) {
      Tensor &copy = scope.get(trainerCopyName(entry.getKey(), static_cast<unsigned>(t)));
      if (copy.buffer() != landing.buffer())
        copy = landing;
    }
    reply.add_landing_vars(entry.getKey().str());
    reply.add_landing_addresses(reinterpret_cast<uint64_t>(landing.raw()));
    reply.add_landing_bytes(landing.bytes());
  }
}

bool GradientLandings::has(int64_t t, llvm::StringRef grad) const {
  auto it = byTrainer_.find(t);
  return it != byTrainer_.end() && it->second.count(grad);
}

Tensor GradientLandings::landing(int64_t t, llvm::StringRef grad) const {
  auto it = byTrainer_.find(t);
  if (it == byTrainer_.end())
    return Tensor();
  auto found = it->second.find(grad);
  return found == it->second.end() ? Tensor() : found->getValue();
}

void GradientLandings::retire(Scope &scope, bool sync, int64_t t) {
  auto it = byTrainer_.find(t);
  if (it == byTrainer_.end())
    return;
  for (auto &entry : it->second) {
    retired_.push_back(entry.getValue().buffer());
    if (!sync)
      continue;
    Tensor &copy = scope.get(trainerCopyName(entry.getKey(), static_cast<unsigned>(t)));
    Tensor fresh(copy.dtype(), copy.dims());
    copy = std::move(fresh);
  }
  byTrainer_.erase(it);
}

} // namespace oar::runtime
