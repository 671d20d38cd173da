// Where same-host trainers write their large gradients in a pserver's memory.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "executor/tensor.h"
#include "ops/op_registry.h"
#include "runtime/wire/message.pb.h"
#include "llvm/ADT/StringMap.h"

namespace oar::runtime {

/// A trainer on the pserver's host writes its large gradients straight into a buffer of the
/// pserver's (process_vm_writev), so the pserver's socket thread copies nothing: each trainer
/// copies its own, side by side. Sync: the buffer is the trainer's copy of the gradient that
/// the step's barrier sums. Async and GEO: the block that applies it reads it there, and the
/// acknowledgement (after which the trainer may write it again) waits for that.
/// A buffer keeps its address for good once announced: a trainer that was dropped may still
/// write to it, so retiring a trainer gives its copies fresh buffers and keeps the old ones
/// allocated.
class GradientLandings {
public:
  /// Announces trainer `t`'s landings in the HELLO reply `reply`: one for each gradient of
  /// `grads` (name -> type) of at least kPeerMemoryMinBytes. Sync: the trainer's copies in
  /// `scope` become (share) them. Async: `scope` is not touched (service threads read it).
  void offer(Scope &scope, bool sync, int64_t t, const llvm::StringMap<ops::VarType> &grads,
             proto::MsgHeader &reply);
  /// Whether `grad` of trainer `t` has a landing (a sync copy must then keep its buffer).
  bool has(int64_t t, llvm::StringRef grad) const;
  /// Trainer `t`'s landing of `grad` (sharing its buffer), or an empty tensor.
  Tensor landing(int64_t t, llvm::StringRef grad) const;
  /// Trainer `t` left: it writes nowhere anyone reads any more (sync: its copies in `scope`
  /// get fresh zeroed buffers).
  void retire(Scope &scope, bool sync, int64_t t);

private:
  std::map<int64_t, llvm::StringMap<Tensor>> byTrainer_;
  std::vector<std::shared_ptr<std::byte>> retired_;
};

} // namespace oar::runtime
