// The buffers same-host trainers write their gradients into, and what happens when one leaves.
#include "runtime/gradient_landings.h"

#include "ir/names.h"
#include "runtime/peer_memory.h"

namespace oar::runtime {

void GradientLandings::offer(Scope &scope, int64_t t, const llvm::StringMap<ops::VarType> &grads,
                             proto::MsgHeader &reply) {
  llvm::StringMap<std::shared_ptr<std::byte>> &mine = byTrainer_[t];
  for (const auto &entry : grads) {
    const ops::VarType &type = entry.getValue();
    int64_t numel = 1;
    for (int64_t d : type.dims)
      numel = d < 0 ? -1 : numel * d;
    if (numel <= 0 || type.isRows() ||
        static_cast<size_t>(numel) * dtypeSize(type.dtype) < kPeerMemoryMinBytes)
      continue;
    Tensor &copy = scope.get(trainerCopyName(entry.getKey(), static_cast<unsigned>(t)));
    auto known = mine.find(entry.getKey());
    if (known == mine.end() || copy.buffer() != known->getValue()) {
      if (known != mine.end()) // announced before: it may still be written to
        retired_.push_back(known->getValue());
      copy.resize(type.dtype, type.dims);
      mine[entry.getKey()] = copy.buffer();
    }
    reply.add_landing_vars(entry.getKey().str());
    reply.add_landing_addresses(reinterpret_cast<uint64_t>(copy.raw()));
    reply.add_landing_bytes(copy.bytes());
  }
}

bool GradientLandings::has(int64_t t, llvm::StringRef grad) const {
  auto it = byTrainer_.find(t);
  return it != byTrainer_.end() && it->second.count(grad);
}

void GradientLandings::retire(Scope &scope, int64_t t) {
  auto it = byTrainer_.find(t);
  if (it == byTrainer_.end())
    return;
  for (auto &entry : it->second) {
    retired_.push_back(std::move(entry.getValue()));
    Tensor &copy = scope.get(trainerCopyName(entry.getKey(), static_cast<unsigned>(t)));
    Tensor fresh(copy.dtype(), copy.dims());
    copy = std::move(fresh);
  }
  byTrainer_.erase(it);
}

} // namespace oar::runtime
