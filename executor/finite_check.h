// Finding NaN and inf: in data and checkpoints as they load, and in a step that went bad.
#pragma once

#include <optional>

#include "executor/tensor.h"

namespace oar {

/// The index of the first NaN or inf element of a float tensor; nullopt when every element is
/// finite or the tensor holds integers.
std::optional<int64_t> firstNonFinite(const Tensor &t);

/// The same over `n` elements of `dtype` at `data` (a received message's bytes); nullopt for
/// integer dtypes.
std::optional<int64_t> firstNonFinite(const void *data, DType dtype, int64_t n);

/// An error "<what>: element <i> (of <type>) is nan; ..." when `t` holds a NaN or inf.
llvm::Error checkFinite(const Tensor &t, llvm::StringRef what);

/// After a step whose result is not finite: the first var, in op order, that holds a NaN or
/// inf, the op that wrote it and which of that op's inputs are non-finite too, e.g.
/// "fc_0.tmp_1 (written by op #1 elementwise_add, whose input fc_0.b_0 is non-finite too)".
/// "" when no var of `block` in `scope` holds one.
std::string describeFirstNonFinite(const proto::Block &block, const Scope &scope);

} // namespace oar
