// Shape-inference helpers shared by op declarations.
#pragma once

#include "ir/names.h"
#include "ops/op_registry.h"
#include "llvm/ADT/STLExtras.h"

namespace oar::ops {

inline constexpr const char *kGradOpReason = "a gradient op";

/// Out has X's type.
llvm::Error inferSameAsX(InferContext &ctx);
/// For a grad op: each output slot `S@GRAD` takes the type of input slot `S`, entry by entry.
llvm::Error inferGradsLikeInputs(InferContext &ctx);
/// Requires the input's dtype to be a float type.
llvm::Error requireFloat(const InferContext &ctx, llvm::StringRef slot);
/// A type from dims and dtype.
inline VarType makeType(DType dtype, llvm::ArrayRef<int64_t> dims) {
  VarType t;
  t.dtype = dtype;
  t.dims.assign(dims.begin(), dims.end());
  return t;
}
/// Product of dims[begin, end), or -1 if any of them is unknown.
int64_t dimProduct(llvm::ArrayRef<int64_t> dims, size_t begin, size_t end);

} // namespace oar::ops
