// Sync pserver: where same-host trainers write their large gradients in its memory.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "executor/tensor.h"
#include "llvm/ADT/StringMap.h"
#include "ops/op_registry.h"
#include "runtime/message.pb.h"

namespace oar::runtime {

/// A sync pserver sums each trainer's copy of a gradient at the step's barrier. A trainer on
/// this host writes its large gradients straight into its copies (process_vm_writev), so the
/// pserver's socket thread copies nothing while the trainers wait: each trainer copies its own,
/// side by side. A copy's buffer keeps its address for good once announced: a trainer declared
/// lost may still write to it, so retiring a trainer gives its copies fresh buffers and keeps
/// the old ones allocated.
class GradientLandings {
public:
  /// Announces trainer `t`'s landings in the HELLO reply `reply`: the copy of each gradient of
  /// `grads` (name -> type) of at least kPeerMemoryMinBytes, made in `scope` as needed.
  void offer(Scope &scope, int64_t t, const llvm::StringMap<ops::VarType> &grads,
             proto::MsgHeader &reply);
  /// Whether `grad` of trainer `t` has a landing (its copy must then keep its buffer).
  bool has(int64_t t, llvm::StringRef grad) const;
  /// Trainer `t` left: its copies get fresh zeroed buffers that it cannot write to.
  void retire(Scope &scope, int64_t t);

private:
  std::map<int64_t, llvm::StringMap<std::shared_ptr<std::byte>>> byTrainer_;
  std::vector<std::shared_ptr<std::byte>> retired_;
};

} // namespace oar::runtime
